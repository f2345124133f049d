package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store"
)

// dbWorkMessages is how many plain questions one measurement answers:
// issue 39's "400 plain questions (distinct users, one-part replies, no
// skill)".
const dbWorkMessages = 400

// dbWorkWarm is how many messages a gateway answers before the measured
// ones: its pool's connections are open and have prepared and planned
// their statements, as a running replica's have. Without them the
// figures carried every connection's first use (its start, its caches,
// its plans): 0.05-0.2 ms of executor time per message more with 400
// messages than with 1,600.
const dbWorkWarm = 40

// dbCounters are a database's cumulative counters in pg_stat_database.
type dbCounters struct {
	Commits, Rollbacks              int64
	Inserted, Updated, Deleted      int64
	Returned, Fetched               int64
	BlocksHit, BlocksRead, Backends int64
}

// written is the rows inserted, updated and deleted.
func (c dbCounters) written() int64 { return c.Inserted + c.Updated + c.Deleted }

func (c dbCounters) minus(o dbCounters) dbCounters {
	return dbCounters{c.Commits - o.Commits, c.Rollbacks - o.Rollbacks, c.Inserted - o.Inserted, c.Updated - o.Updated,
		c.Deleted - o.Deleted, c.Returned - o.Returned, c.Fetched - o.Fetched, c.BlocksHit - o.BlocksHit, c.BlocksRead - o.BlocksRead, 0}
}

// tableWrites are the rows written per table (pg_stat_user_tables),
// "table" → inserted, updated, deleted.
type tableWrites map[string][3]int64

// BenchmarkDBWorkPerMessage measures what one answered message costs the
// database: committed transactions, rows written and rows read per
// message, from pg_stat_database over the whole span (background work —
// River's leader, the sweeps — included), for 400 plain questions from
// distinct users over real WeCom callbacks (signed, encrypted, a nonce
// each), a model answering at once in one part, no skill.
//
// Postgres counts a backend's work in pg_stat_database when it flushes
// its statistics: at most once a second while busy, ten seconds after it
// goes idle, and always when it exits. So the counters are read only
// when no backend of the database is left: each span starts a gateway on
// a pool of its own and ends by stopping it and closing the pool. After a
// first span (the access token fetched, River's tables), a span answers
// dbWorkWarm messages alone, and the loaded span answers dbWorkWarm and
// then the 400: work per message = (the loaded span − the warm span) /
// 400, so a gateway's start and stop and its connections' first use are
// not counted, as on a replica that has been running. The counters are
// read from a connection to another database, so the reading itself is
// not counted.
//
// When pg_stat_statements is loaded (shared_preload_libraries; not by
// default, and not here), it also reports the executor time per message,
// over the 400 alone (reset after the warm ones, read before the stop),
// and the statements that spend it.
//
// It runs three times: with eight callbacks at once (the counts the
// targets name: the ack path then stores several messages per
// transaction), with one at a time, and with eight at once where the
// model first calls one read skill (hr_policy_search, against the demo
// HR backend) and then answers. It also reads the CPU time of the whole Postgres
// server over each span (/proc): messages per second per core, the figure
// the README sizes a database by. Executor time is wall time inside
// Postgres: on this 2-core machine the backends also wait for the CPU
// the gateway, the fakes and the other backends use, and with eight at
// once one run gave 2.63 ms where four others gave 0.86-1.12 ms with the
// same code; one at a time it moved less (0.89-0.97 ms over four runs).
//
//	make bench   (or: go test -run '^$' -bench DBWorkPerMessage -benchtime 1x ./gateway/)
func BenchmarkDBWorkPerMessage(b *testing.B) {
	for _, c := range []struct {
		name  string
		at    int
		skill bool
	}{{"8-at-once", 8, false}, {"1-at-once", 1, false}, {"one-skill-8-at-once", 8, true}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				dbWork(b, c.at, c.skill)
			}
		})
	}
}

// issue39Figures are the figures issue 39 measured on 2026-12-05 before
// its work ("today"), the lower end of each range: what the printed
// ratios compare with.
var issue39Figures = struct{ xact, rows, execMs float64 }{16, 19, 2.17}

func dbWork(b *testing.B, at int, skill bool) {
	h := gatewaytest.New(b)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		if skill && req.Messages[len(req.Messages)-1].Role != openai.ChatMessageRoleTool {
			return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_policy_search", `{"query":"年假"}`)}}
		}
		return openaitest.Reply{Content: "你还有 5 天年假。"}
	})
	what := "no skill"
	if skill {
		what = "one read skill call"
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := gatewaytest.WithTimeout(b, 5*time.Minute)
	mon := statsConn(b, h.DBURL)
	dbName := h.Pool.Config().ConnConfig.Database
	// The harness's own pool migrated the database: its backends go, so
	// that their statistics are flushed now and not during the spans.
	h.Pool.Reset()
	pss := statementsOn(b, ctx, h.DBURL)

	sent := 0
	var tables []tableWrites
	var cpu []time.Duration // Postgres's CPU time per span
	// span starts a gateway on a pool of its own, answers warm messages,
	// then the measured ones, and stops; the executor time is read over
	// the measured ones alone, before the stop.
	span := func(warm, messages int, from string) (dbCounters, execFigures) {
		b.Helper()
		cpu0 := postgresCPU(b)
		pool, err := store.Open(ctx, h.DBURL, 20) // the production default
		if err != nil {
			b.Fatal(err)
		}
		gw := h.Start(gateway.Deps{Pool: pool, Logger: quiet})
		answer := func(n int, prefix string) {
			send(b, h, n, prefix, at)
			sent += n
			if _, err := h.WeComAPI.WaitMessages(ctx, sent); err != nil {
				b.Fatal(err)
			}
		}
		answer(warm, from+"-warm")
		pss.reset(b, ctx, h.DBURL)
		answer(messages, from)
		exec := pss.read(b, ctx, h.DBURL)
		if err := gw.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		pool.Close()
		c := settled(b, ctx, mon, dbName)
		cpu = append(cpu, postgresCPU(b)-cpu0)
		tables = append(tables, tableStats(b, ctx, h.DBURL))
		return c, exec
	}
	s0, _ := span(5, 0, "first") // the access token, River's tables
	warmed, _ := span(dbWorkWarm, 0, "warmed")
	loaded, loadedExec := span(dbWorkWarm, dbWorkMessages, "user")
	work := loaded.minus(warmed).minus(warmed.minus(s0))
	fixed := warmed.minus(s0)

	per := func(v int64) float64 { return float64(v) / dbWorkMessages }
	b.ReportMetric(per(work.Commits), "xact/msg")
	b.ReportMetric(per(work.written()), "rows-written/msg")
	b.ReportMetric(per(work.Returned+work.Fetched), "rows-read/msg")
	fmt.Printf("\nper answered message (%d plain questions, distinct users, WeCom callbacks %d at once, one-part replies, %s):\n"+
		"  committed transactions %.2f (rolled back %.2f)\n  rows written %.2f (inserted %.2f, updated %.2f, deleted %.2f)\n"+
		"  rows read %.2f (returned %.2f, fetched %.2f); blocks hit %.1f, read %.2f\n"+
		"  a gateway's start, %d warm-up messages and its stop: %d transactions, %d rows written\n",
		dbWorkMessages, at, what, per(work.Commits), per(work.Rollbacks), per(work.written()), per(work.Inserted), per(work.Updated), per(work.Deleted),
		per(work.Returned+work.Fetched), per(work.Returned), per(work.Fetched), per(work.BlocksHit), per(work.BlocksRead),
		dbWorkWarm, fixed.Commits, fixed.written())
	// The server's CPU time for the loaded span less an empty one's: every
	// process of the server, the WAL writer, checkpointer and autovacuum
	// included (the server runs nothing else meanwhile).
	cpuPer := (cpu[2] - cpu[1]).Seconds() / dbWorkMessages
	b.ReportMetric(cpuPer*1e3, "pg-cpu-ms/msg")
	fmt.Printf("  Postgres CPU time %.2f ms (every server process, /proc): %.0f answered messages per second per core\n",
		cpuPer*1e3, 1/cpuPer)
	fmt.Printf("  against issue 39's figures before (%.0f transactions, %.0f rows written): ×%.2f, ×%.2f\n",
		issue39Figures.xact, issue39Figures.rows, per(work.Commits)/issue39Figures.xact, per(work.written())/issue39Figures.rows)
	// Where the rows go: per table, the loaded span less the empty one.
	loadedT, emptyT, baseT := tables[2], tables[1], tables[0]
	var lines []string
	for name, w := range loadedT {
		var d [3]float64
		for k := range 3 {
			d[k] = per(w[k] - emptyT[name][k] - (emptyT[name][k] - baseT[name][k]))
		}
		if d[0]+d[1]+d[2] > 0.005 {
			lines = append(lines, fmt.Sprintf("    %-24s inserted %5.2f  updated %5.2f  deleted %5.2f", name, d[0], d[1], d[2]))
		}
	}
	slices.Sort(lines)
	fmt.Printf("  rows written per table:\n%s\n", strings.Join(lines, "\n"))
	if pss {
		ms := loadedExec.total / dbWorkMessages
		b.ReportMetric(ms, "exec-ms/msg")
		fmt.Printf("  Postgres executor time %.3f ms (pg_stat_statements; statements %.1f; ×%.2f of issue 39's %.2f ms)\n"+
			"  statements by executor time, per message:\n",
			ms, float64(loadedExec.calls)/dbWorkMessages, ms/issue39Figures.execMs, issue39Figures.execMs)
		for _, st := range loadedExec.top {
			fmt.Printf("    %6.3f ms  %5.2f calls  %s\n", st.total/dbWorkMessages, float64(st.calls)/dbWorkMessages, st.query)
		}
	}
}

// statements is whether pg_stat_statements is loaded (shared_preload_libraries)
// and installed in the database at dbURL, installing it if it can.
type statements bool

// execFigures are pg_stat_statements' totals for one database.
type execFigures struct {
	total float64 // ms
	calls int64
	top   []execStatement
}

type execStatement struct {
	query string
	calls int64
	total float64
}

func statementsOn(b *testing.B, ctx context.Context, dbURL string) statements {
	b.Helper()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return false
	}
	_, err = conn.Exec(ctx, `SELECT 1 FROM pg_stat_statements LIMIT 1`) // fails unless preloaded
	return err == nil
}

// reset forgets the database's statements so far. It runs in the database
// (the extension's functions are there), on a connection of its own that
// is gone before the counters are read: its one transaction, and read's,
// add 0.0025 transactions to each message's figure.
func (s statements) reset(b *testing.B, ctx context.Context, dbURL string) {
	b.Helper()
	if !s {
		return
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck
	if _, err := conn.Exec(ctx, `SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)`); err != nil {
		b.Fatal(err)
	}
}

func (s statements) read(b *testing.B, ctx context.Context, dbURL string) execFigures {
	b.Helper()
	var f execFigures
	if !s {
		return f
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck
	rows, err := conn.Query(ctx, `
SELECT regexp_replace(left(query, 90), '\s+', ' ', 'g'), calls, total_exec_time FROM pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query NOT LIKE '%pg_stat_statements%'
 ORDER BY total_exec_time DESC`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var st execStatement
		if err := rows.Scan(&st.query, &st.calls, &st.total); err != nil {
			b.Fatal(err)
		}
		f.total, f.calls = f.total+st.total, f.calls+st.calls
		if len(f.top) < 20 {
			f.top = append(f.top, st)
		}
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return f
}

// tableStats reads the rows written per table of the database at dbURL.
// It is read after the counters (its own reading is a transaction of the
// database, not counted by then).
func tableStats(b *testing.B, ctx context.Context, dbURL string) tableWrites {
	b.Helper()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx) //nolint:errcheck
	rows, err := conn.Query(ctx, `SELECT schemaname || '.' || relname, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables`)
	if err != nil {
		b.Fatal(err)
	}
	out := tableWrites{}
	for rows.Next() {
		var name string
		var w [3]int64
		if err := rows.Scan(&name, &w[0], &w[1], &w[2]); err != nil {
			b.Fatal(err)
		}
		out[strings.TrimPrefix(name, "public.")] = w
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// send posts n signed WeCom callbacks, a question each from its own user
// (prefix and a number), at at once.
func send(b *testing.B, h *gatewaytest.Harness, n int, prefix string, at int) {
	b.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	for range at {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				user := fmt.Sprintf("%s%04d", prefix, i)
				u, body := h.CallbackRequest(gatewaytest.TextXML(user, "我还有几天年假？", "m-"+user), time.Now())
				if status, _ := gatewaytest.Post(b, u, body); status != http.StatusOK {
					b.Errorf("callback of %s: %d", user, status)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// statsConn is a connection to the server's postgres database, from which
// the test database's counters are read without adding to them.
func statsConn(b *testing.B, dbURL string) *pgx.Conn {
	b.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		b.Fatal(err)
	}
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) }) //nolint:errcheck
	return conn
}

// settled reads db's counters once none of its backends is left (each
// flushed its statistics as it exited) and two reads agree.
func settled(b *testing.B, ctx context.Context, conn *pgx.Conn, db string) dbCounters {
	b.Helper()
	var last dbCounters
	for {
		var c dbCounters
		err := conn.QueryRow(ctx, `
SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_returned, tup_fetched, blks_hit, blks_read,
       (SELECT count(*) FROM pg_stat_activity a WHERE a.datname = d.datname)
FROM pg_stat_database d WHERE datname = $1`, db).Scan(&c.Commits, &c.Rollbacks, &c.Inserted, &c.Updated, &c.Deleted,
			&c.Returned, &c.Fetched, &c.BlocksHit, &c.BlocksRead, &c.Backends)
		if err != nil {
			b.Fatal(err)
		}
		if c.Backends == 0 && c == last {
			return c
		}
		last = c
		select {
		case <-ctx.Done():
			b.Fatalf("the database's backends did not go: %d left", c.Backends)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// postgresCPU is the CPU time the local Postgres server has used so far:
// user and system time of its live processes, and of the backends that
// exited (the postmaster's reaped children). Clock ticks of 10 ms.
func postgresCPU(b *testing.B) time.Duration {
	b.Helper()
	const tick = 10 * time.Millisecond // USER_HZ = 100
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces; split after it.
		open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		if open < 0 || end < open || !bytes.HasPrefix(raw[open+1:end], []byte("postgres")) {
			continue
		}
		f := strings.Fields(string(raw[end+2:]))
		if len(f) < 15 {
			continue
		}
		// Fields after comm, from 0: state, ppid, ..., utime 11, stime 12,
		// cutime 13, cstime 14.
		for _, i := range []int{11, 12, 13, 14} {
			n, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += n
		}
	}
	if ticks == 0 {
		b.Fatal("no Postgres process found in /proc")
	}
	return time.Duration(ticks) * tick
}
