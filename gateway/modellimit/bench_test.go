package modellimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/config"
)

// roundTrips counts what a pool sends to Postgres: a query or a batch is
// one round trip.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// BenchmarkLimiterCall is what the limiter costs one model call, its
// acquire and release with nothing waiting, per scope: replica (memory
// only), shared (one replica on the database) and shared by 4 replicas
// calling at once (4 pools on one database, a caller each), beside one
// bare round trip to the same database for scale. The budgets
// are on, high enough never to refuse, so every claim updates them; a
// call uses more tokens than estimated, so every release charges them.
func BenchmarkLimiterCall(b *testing.B) {
	cfg := modelConfig(config.LimitsReplica, "http://model.invalid/v1")
	cfg.RequestsPerMinute, cfg.TokensPerMinute = 1<<30, 1<<30
	call := func(b *testing.B, g gate) {
		release, err := g.acquire(context.Background(), 100)
		if err != nil {
			b.Fatal(err)
		}
		release(150, 0)
	}
	b.Run("replica", func(b *testing.B) {
		g := newReplicaGate(cfg)
		for b.Loop() {
			call(b, g)
		}
		b.ReportMetric(0, "roundtrips/op")
	})
	shared := cfg
	shared.LimitsScope = config.LimitsShared
	b.Run("baseline-select-1", func(b *testing.B) { // one bare round trip, for scale
		pool := replicaPools(b, 1)[0]
		for b.Loop() {
			if _, err := pool.Exec(context.Background(), `SELECT 1`); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(1, "roundtrips/op")
	})
	b.Run("shared", func(b *testing.B) {
		rt := &roundTrips{}
		g := newSharedGate(shared, tracedPools(b, 1, rt)[0], time.Now)
		call(b, g) // makes the rows
		rt.n.Store(0)
		for b.Loop() {
			call(b, g)
		}
		b.ReportMetric(float64(rt.n.Load())/float64(b.N), "roundtrips/op")
	})
	b.Run("shared-4-replicas", func(b *testing.B) {
		rt := &roundTrips{}
		pools := tracedPools(b, 4, rt)
		gates := sharedGates(shared, pools, time.Now)
		call(b, gates[0])
		rt.n.Store(0)
		var next atomic.Int64
		b.SetParallelism(2) // 4 callers on this 2-core machine, one replica each
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			g := gates[next.Add(1)%int64(len(gates))]
			for pb.Next() {
				call(b, g)
			}
		})
		b.ReportMetric(float64(rt.n.Load())/float64(b.N), "roundtrips/op")
	})
}
