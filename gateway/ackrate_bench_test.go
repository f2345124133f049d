package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/silenceper/wechat/v2/cache"

	"github.com/hermes-gw/hermes/channels/wecom"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/groupcommit"
	"github.com/hermes-gw/hermes/gateway/store"
)

// ackRoundSize is how many signed callbacks one round of
// BenchmarkAckThroughput posts per variant and concurrency.
const ackRoundSize = 2000

// BenchmarkAckThroughput compares Hermes's ack path with the least a
// durable ack can do: signed WeCom callbacks posted at 32 and at 128 at
// once, over HTTP, while the workers are busy with a 2 s model; against a
// handler that reads the body and makes one durable INSERT of it in
// autocommit, on a pool of the same size (both with synchronous_commit on).
// A third variant, the floor, is the least a correct ack can do: what the
// baseline does after what the protocol demands before anything is stored
// (the signature checked, the message decrypted and parsed), with the row
// written through the group commit Hermes uses, at its defaults; it
// claims no nonce, skips no duplicate and queues no job. The variants run
// in interleaved rounds, so all see the same machine, after a first round
// of each that brings the model to busy (printed apart); it prints acks
// per second and the ack p99 of each, and their ratios to the baseline.
//
//	go test -run '^$' -bench AckThroughput -benchtime 1x ./gateway/
func BenchmarkAckThroughput(b *testing.B) {
	h := gatewaytest.New(b)
	slowModel(h)
	ctx := context.Background()
	// Durable commits on both sides: the test databases' sessions do not
	// wait for the WAL to reach the disk (storetest), these do.
	u, err := url.Parse(h.DBURL)
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Del("options")
	u.RawQuery = q.Encode()
	pools := make([]*pgxpool.Pool, 2)
	for i := range pools {
		if pools[i], err = store.Open(ctx, u.String(), 20); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(pools[i].Close)
	}
	h.Start(gateway.Deps{Pool: pools[0]})
	baselinePool := pools[1]
	if _, err := baselinePool.Exec(ctx, `CREATE TABLE bench_acks (id bigserial PRIMARY KEY, body bytea NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	baseline := httptest.NewServer(bareAck(nil, func(ctx context.Context, body []byte) error {
		_, err := baselinePool.Exec(ctx, `INSERT INTO bench_acks (body) VALUES ($1)`, body)
		return err
	}))
	b.Cleanup(baseline.Close)
	floorRows := groupcommit.New(groupcommit.Config{}, baselinePool, func(ctx context.Context, tx pgx.Tx, rows []*[]byte) error {
		bodies := make([][]byte, len(rows))
		for i, body := range rows {
			bodies[i] = *body
		}
		_, err := tx.Exec(ctx, `INSERT INTO bench_acks (body) SELECT unnest($1::bytea[])`, bodies)
		return err
	})
	b.Cleanup(floorRows.Stop)
	app, err := wecom.NewApp(wecom.AppConfig{Name: gatewaytest.App, CorpID: gatewaytest.CorpID, AgentID: gatewaytest.AgentID,
		Secret: h.Secret, Token: gatewaytest.Token, EncodingAESKey: gatewaytest.AESKey}, cache.NewMemory(), nil)
	if err != nil {
		b.Fatal(err)
	}
	floor := httptest.NewServer(bareAck(app, func(ctx context.Context, body []byte) error {
		return floorRows.Do(ctx, &body)
	}))
	b.Cleanup(floor.Close)
	servers := map[string]string{"baseline": baseline.URL, "floor": floor.URL}
	variants := []string{"baseline", "floor", "hermes"}

	type result struct{ rate, p99 []float64 }
	results := map[string]*result{}
	seq := 0
	round := func(variant string, concurrency int) {
		reqs := make([]struct {
			u    string
			body []byte
		}, ackRoundSize)
		for i := range reqs {
			seq++
			u, body := h.CallbackRequest(gatewaytest.TextXML(fmt.Sprintf("user%d", seq%500), "我还有几天年假？", fmt.Sprintf("rate-%d", seq)), time.Now())
			if srv, ok := servers[variant]; ok {
				_, query, _ := strings.Cut(u, "?")
				u = srv + "/callback?" + query
			}
			reqs[i].u, reqs[i].body = u, body
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency, MaxConnsPerHost: concurrency}}
		defer client.CloseIdleConnections()
		lat := make([]time.Duration, len(reqs))
		next := make(chan int)
		var wg sync.WaitGroup
		start := time.Now()
		for range concurrency {
			wg.Go(func() {
				for i := range next {
					t0 := time.Now()
					resp, err := client.Post(reqs[i].u, "text/xml", bytes.NewReader(reqs[i].body))
					if err != nil {
						b.Error(err)
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("%s: callback answered %d", variant, resp.StatusCode)
					}
					lat[i] = time.Since(t0)
				}
			})
		}
		for i := range reqs {
			next <- i
		}
		close(next)
		wg.Wait()
		wall := time.Since(start)
		slices.Sort(lat)
		key := fmt.Sprintf("%s@%d", variant, concurrency)
		r := results[key]
		if r == nil {
			r = &result{}
			results[key] = r
		}
		r.rate = append(r.rate, float64(len(reqs))/wall.Seconds())
		r.p99 = append(r.p99, float64(lat[len(lat)*99/100].Microseconds())/1000)
	}
	// The target is about acks while the model is busy. In the first
	// round it is not yet: the workers, idle until then, start
	// agent_concurrency runs at once (some 18 round trips each, and the
	// first loads the tokenizer, about 80 ms of CPU), which compete with
	// the acks for the cores; later rounds find every worker waiting on
	// the model, starting runs only as earlier ones end. So one round of
	// each variant comes first, printed apart.
	for _, variant := range variants {
		round(variant, 32)
		key := variant + "@32"
		results["first "+key] = results[key]
		delete(results, key)
	}
	b.ResetTimer()
	const rounds = 3
	for range b.N {
		for range rounds {
			for _, c := range []int{32, 128} {
				for _, variant := range variants {
					round(variant, c)
				}
			}
		}
	}
	b.StopTimer()
	for _, c := range []int{32, 128} {
		br := results[fmt.Sprintf("baseline@%d", c)]
		fmt.Printf("\n%d at once, %d callbacks a round, model busy at 2 s a call:\n", c, ackRoundSize)
		for _, variant := range variants {
			r := results[fmt.Sprintf("%s@%d", variant, c)]
			ratios := make([]string, len(r.rate))
			for i := range r.rate {
				ratios[i] = fmt.Sprintf("%.2f", r.rate[i]/br.rate[i])
			}
			fmt.Printf("  %-8s acks/s %v  p99 ms %v  ÷ baseline per round %v\n", variant, rounded(r.rate, 0), rounded(r.p99, 1), ratios)
		}
		if c == 32 {
			fmt.Printf("  the first round after start (not in the ratios):")
			for _, variant := range variants {
				f := results["first "+variant+"@32"]
				fmt.Printf(" %s acks/s %.0f p99 ms %.1f;", variant, f.rate[0], f.p99[0])
			}
			fmt.Println()
		}
		hr, fr := results[fmt.Sprintf("hermes@%d", c)], results[fmt.Sprintf("floor@%d", c)]
		b.ReportMetric(median(hr.rate)/median(br.rate), fmt.Sprintf("ratio@%d", c))
		b.ReportMetric(median(fr.rate)/median(br.rate), fmt.Sprintf("floor-ratio@%d", c))
		b.ReportMetric(median(hr.p99), fmt.Sprintf("p99-ms@%d", c))
	}
}

// bareAck is a callback handler that stores the body with store, after,
// when app is set, checking, decrypting and parsing the callback with
// app, as every WeCom callback must be before anything is stored.
func bareAck(app *wecom.App, store func(context.Context, []byte) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil && app != nil {
			_, err = app.ParseCallback(r.URL.Query(), body)
		}
		if err == nil {
			err = store(r.Context(), body)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("success"))
	}
}

func rounded(xs []float64, digits int) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%.*f", digits, x)
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
