package memory_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// embedded stores a fact of o created at, for a year, with its vector by
// e (the fake endpoint), and returns its id.
func embedded(t *testing.T, pool *pgxpool.Pool, e memory.Embedder, o memory.Owner, text string, at time.Time) int64 {
	t.Helper()
	vec := embed(t, e, text)
	id, err := memory.Add(context.Background(), pool, memory.Memory{Owner: o, Kind: memory.KindFact, Text: text,
		Source: "inbound:1", CreatedAt: at, ExpiresAt: at.Add(year), Embedding: vec})
	if err != nil {
		t.Fatalf("add %q: %v", text, err)
	}
	return id
}

func embed(t *testing.T, e memory.Embedder, text string) []float32 {
	t.Helper()
	vec, err := e.Embed(context.Background(), text)
	if err != nil {
		t.Fatalf("embed %q: %v", text, err)
	}
	return vec
}

// recallWith is a hybrid recall of at most limit for query, embedded by e.
func recallWith(t *testing.T, pool *pgxpool.Pool, e memory.Embedder, o memory.Owner, query string, limit int, min float64, now time.Time) []memory.Memory {
	t.Helper()
	ms, err := memory.RecallWith(context.Background(), pool, o, query, limit, now,
		memory.Similar{Embedding: embed(t, e, query), Min: min})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// The fake's vectors, by topic (embed_test.go): the queries below share
// no term with the VPN notes, only their topic.
const (
	vpnClient  = "内网要用 VPN 客户端"   // remote access: cosine 1 to 远程接入
	vpnOffice  = "VPN 账号在上海办公室申请" // remote access and the office: cosine 0.71
	callMe     = "叫我小王"           // another topic: cosine 0.01
	noTopic    = "上班时间 9 点"       // none: cosine 0.1
	remoteHowQ = "远程接入怎么弄"        // the query, on remote access
	sharedQ    = "远程接入上班要注意什么"    // remote access, and 上班 shared with noTopic
)

func TestRecallWithFindsSimilarWithoutSharedTerm(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	e := memory.NewEmbedder(newFakeEmbeddings(t).endpoint(5 * time.Second))
	embedded(t, pool, e, wang, vpnClient, t0)
	embedded(t, pool, e, wang, callMe, t0.Add(time.Minute))
	now := t0.Add(time.Hour)

	if got := recall(t, pool, wang, remoteHowQ, now); len(got) != 0 {
		t.Fatalf("lexical recall = %q; the test wants no shared term", texts(got))
	}
	got := recallWith(t, pool, e, wang, remoteHowQ, 5, 0.3, now)
	if len(got) != 1 || got[0].Text != vpnClient || got[0].UsedAt == nil || !got[0].UsedAt.Equal(now) {
		t.Fatalf("hybrid recall = %+v, want %q used now", got, vpnClient)
	}
	for _, m := range mustList(t, pool, wang, now) {
		if used := m.UsedAt != nil; used != (m.Text == vpnClient) {
			t.Errorf("%q: used_at %v after the recall", m.Text, m.UsedAt)
		}
	}
}

func TestRecallWithThresholdAndOrder(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	e := memory.NewEmbedder(newFakeEmbeddings(t).endpoint(5 * time.Second))
	embedded(t, pool, e, wang, vpnClient, t0)
	embedded(t, pool, e, wang, vpnOffice, t0.Add(time.Minute)) // newer, less similar
	embedded(t, pool, e, wang, callMe, t0.Add(2*time.Minute))
	now := t0.Add(time.Hour)

	for _, tc := range []struct {
		min   float64
		limit int
		want  []string
	}{
		{0.3, 5, []string{vpnClient, vpnOffice}}, // most similar first; 叫我小王 below
		{0.8, 5, []string{vpnClient}},            // 0.71 is below
		{0.3, 1, []string{vpnClient}},
		{0.999, 5, []string{vpnClient}}, // cosine 1 (float32 rounding aside)
	} {
		got := recallWith(t, pool, e, wang, remoteHowQ, tc.limit, tc.min, now)
		if strings.Join(texts(got), "|") != strings.Join(tc.want, "|") {
			t.Errorf("min %g, limit %d: recall = %q, want %q", tc.min, tc.limit, texts(got), tc.want)
		}
	}
}

// A memory sharing a term is recalled whatever its similarity (or
// without an embedding), after the similar ones.
func TestRecallWithKeepsLexicalHitsAfterSimilarOnes(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	e := memory.NewEmbedder(newFakeEmbeddings(t).endpoint(5 * time.Second))
	embedded(t, pool, e, wang, noTopic, t0.Add(2*time.Minute)) // newest, shares 上班
	embedded(t, pool, e, wang, vpnClient, t0)
	embedded(t, pool, e, wang, callMe, t0)
	add(t, pool, wang, "上班打卡用企业微信", t0.Add(time.Minute)) // no embedding (stored before), shares 上班
	now := t0.Add(time.Hour)

	got := recallWith(t, pool, e, wang, sharedQ, 5, 0.3, now)
	want := []string{vpnClient, noTopic, "上班打卡用企业微信"} // similar, then lexical newest first
	if strings.Join(texts(got), "|") != strings.Join(want, "|") {
		t.Fatalf("recall = %q, want %q", texts(got), want)
	}
	if got := recallWith(t, pool, e, wang, sharedQ, 2, 0.3, now); strings.Join(texts(got), "|") != strings.Join(want[:2], "|") {
		t.Errorf("limit 2: recall = %q, want %q", texts(got), want[:2])
	}
	// Without an embedding, RecallWith is Recall.
	ms, err := memory.RecallWith(context.Background(), pool, wang, sharedQ, 5, now, memory.Similar{Min: 0.3})
	if err != nil || strings.Join(texts(ms), "|") != strings.Join(want[1:], "|") {
		t.Errorf("lexical RecallWith = %q, %v; want %q", texts(ms), err, want[1:])
	}
}

func TestRecallWithIsolatesOwners(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	e := memory.NewEmbedder(newFakeEmbeddings(t).endpoint(5 * time.Second))
	embedded(t, pool, e, li, vpnClient, t0)
	embedded(t, pool, e, wang2, vpnOffice, t0)
	now := t0.Add(time.Hour)
	if got := recallWith(t, pool, e, wang, remoteHowQ, 5, 0, now); len(got) != 0 {
		t.Fatalf("wang recalls others' %q", texts(got))
	}
	embedded(t, pool, e, wang, "我的内网账号是 wangxiao", t0)
	got := recallWith(t, pool, e, wang, remoteHowQ, 5, 0, now)
	if len(got) != 1 || got[0].Owner != wang {
		t.Fatalf("wang recalls %+v, want only his own", got)
	}
	for _, o := range []memory.Owner{li, wang2} {
		if ms := mustList(t, pool, o, now); len(ms) != 1 || ms[0].UsedAt != nil {
			t.Errorf("%v's memory marked used by wang's recall: %+v", o, ms)
		}
	}
}

func TestAddRejectsBadEmbeddings(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	nan := float32(math.NaN())
	for name, vec := range map[string][]float32{
		"Empty": {}, "NaN": {1, nan}, "Inf": {float32(math.Inf(1))}, "TooMany": make([]float32, memory.MaxDims+1),
	} {
		_, err := memory.Add(ctx, pool, memory.Memory{Owner: wang, Kind: memory.KindFact, Text: "叫我小王",
			CreatedAt: t0, ExpiresAt: t0.Add(year), Embedding: vec})
		if !errors.Is(err, memory.ErrBadEmbedding) {
			t.Errorf("%s: err %v, want ErrBadEmbedding", name, err)
		}
	}
	if _, err := memory.RecallWith(ctx, pool, wang, "叫我", 5, t0, memory.Similar{Embedding: []float32{nan}}); !errors.Is(err, memory.ErrBadEmbedding) {
		t.Errorf("recall with a NaN query: %v", err)
	}
}

// The same text again without an embedding (the endpoint failed this
// time) keeps the one it had; with one, it is replaced.
func TestAddSameTextKeepsItsEmbedding(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	e := memory.NewEmbedder(newFakeEmbeddings(t).endpoint(5 * time.Second))
	id := embedded(t, pool, e, wang, vpnClient, t0)
	vector := func() []float32 {
		var v []float32
		if err := pool.QueryRow(ctx, `SELECT embedding FROM memories WHERE id = $1`, id).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	add(t, pool, wang, vpnClient, t0.Add(time.Minute))
	if v := vector(); len(v) != len(topics)+1 {
		t.Fatalf("embedding after a refresh without one: %v", v)
	}
	if _, err := memory.Add(ctx, pool, memory.Memory{Owner: wang, Kind: memory.KindFact, Text: vpnClient,
		CreatedAt: t0, ExpiresAt: t0.Add(year), Embedding: []float32{1, 2}}); err != nil {
		t.Fatal(err)
	}
	if v := vector(); len(v) != 2 {
		t.Errorf("embedding after a refresh with a new one: %v", v)
	}
	// A memory added without one has NULL, not an empty array.
	var null bool
	plain := add(t, pool, wang, callMe, t0)
	if err := pool.QueryRow(ctx, `SELECT embedding IS NULL FROM memories WHERE id = $1`, plain).Scan(&null); err != nil || !null {
		t.Errorf("embedding of a memory added without one: null %v, %v", null, err)
	}
}

// A connection in the simple protocol gets the embeddings as text, which
// pgx decodes instead of RecallWith's binary decoding: the same recall.
func TestRecallWithOverTheSimpleProtocol(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	e := memory.NewEmbedder(newFakeEmbeddings(t).endpoint(5 * time.Second))
	embedded(t, pool, e, wang, vpnClient, t0)
	embedded(t, pool, e, wang, vpnOffice, t0.Add(time.Minute))
	cc := pool.Config().ConnConfig.Copy()
	cc.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ms, err := memory.RecallWith(context.Background(), conn, wang, remoteHowQ, 5, t0.Add(time.Hour),
		memory.Similar{Embedding: embed(t, e, remoteHowQ), Min: 0.3})
	if want := []string{vpnClient, vpnOffice}; err != nil || strings.Join(texts(ms), "|") != strings.Join(want, "|") {
		t.Fatalf("recall = %q, %v; want %q", texts(ms), err, want)
	}
}
