package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store"
)

// database.max_conns is every connection a replica opens, whatever it
// runs: with a long-connection AI bot held (its delivery queue worked by a
// job client of its own) and every pooled connection in use, the replica
// has at most max_conns open.
func TestMaxConnsHoldsWithALongConnectionBot(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	ws := wecomtest.NewBotWSServer(t, wsBotID, wsSecret)
	const maxConns = 20
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	pool, err := store.Open(ctx, h.DBURL+"&application_name=budgeted", maxConns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	h.StartExtra(gatewaytest.WSBotYAML(ws.URL()), gateway.Deps{Pool: pool})
	if _, err := ws.WaitSubscriptions(ctx, 1, true); err != nil {
		t.Fatal(err)
	}

	// Every pooled connection taken (those the replica keeps, like the
	// session leases' upkeep's, and every one it will still give): the
	// pool is at its size, and the connections the job clients took out
	// of it for good are beside it.
	var held []*pgxpool.Conn
	// Released however the test ends: a held connection would keep the
	// pool's Close, in the cleanup, waiting forever.
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for {
		// Long enough for a new connection on a loaded machine: a
		// shorter wait ended the loop before the pool was full.
		short, cancel := context.WithTimeout(ctx, time.Second)
		c, err := pool.Acquire(short)
		cancel()
		if err != nil {
			break
		}
		held = append(held, c)
	}
	if stat := pool.Stat(); stat.TotalConns() != pool.Config().MaxConns {
		t.Fatalf("pool holds %d connections, want its size %d", stat.TotalConns(), pool.Config().MaxConns)
	}
	open := h.Count(`SELECT count(*) FROM pg_stat_activity WHERE application_name = 'budgeted'`)
	if open > maxConns {
		t.Errorf("%d connections open, database.max_conns is %d", open, maxConns)
	}
	t.Logf("%d connections open with max_conns %d", open, maxConns)
}
