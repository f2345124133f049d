package store_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
	"github.com/hermes-gw/hermes/skills"
)

// TestBreakerOpeningsRecorded: a skill whose backend answers 500 trips
// its breaker; the recorder, as the registry's hook, stores the opening
// at the registry's clock, and BreakerOpenings counts it in its hour
// with a later reopening after a failed probe; changes to half-open or
// closed, and openings outside the range, are not counted.
func TestBreakerOpeningsRecorded(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)

	hour := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	rec := store.NewBreakerRecorder(pool, slog.New(slog.DiscardHandler))
	reg, err := skills.NewRegistry([]*skills.Skill{{Name: "it_vpn_reset", Description: "reset", Endpoint: srv.URL,
		Identity: skills.IdentityConfig{None: true}, Breaker: &skills.BreakerPolicy{Failures: 2, OpenFor: time.Hour}}},
		skills.Options{Now: func() time.Time { return hour.Add(17 * time.Minute) }, Logger: slog.New(slog.DiscardHandler),
			OnBreakerChange: rec.Record})
	if err != nil {
		t.Fatal(err)
	}
	caller := skills.Caller{UserID: "zhangsan", Channel: "wecom", Account: "app-it"}
	for range 2 {
		if _, err := reg.Call(ctx, caller, "it_vpn_reset", nil); errors.Is(err, skills.ErrCircuitOpen) || err == nil {
			t.Fatalf("call: err = %v, want the backend's 500", err)
		}
	}
	if got := reg.BreakerState("it_vpn_reset"); got != "open" {
		t.Fatalf("breaker %q after two failures, want open", got)
	}
	// The rest of a flapping hour, and an opening before the range.
	for _, e := range []struct {
		skill, from, to string
		at              time.Time
	}{
		{"it_vpn_reset", "open", "half-open", hour.Add(70 * time.Minute)},
		{"it_vpn_reset", "half-open", "open", hour.Add(71 * time.Minute)},
		{"hr_leave_balance", "closed", "open", hour.Add(-time.Minute)},
		{"hr_leave_balance", "open", "half-open", hour.Add(30 * time.Minute)},
		{"hr_leave_balance", "half-open", "closed", hour.Add(31 * time.Minute)},
	} {
		rec.Record(e.skill, e.from, e.to, e.at)
	}
	rec.Wait()
	if rec.Dropped() != 0 {
		t.Fatalf("dropped %d changes", rec.Dropped())
	}

	var stored int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM skill_breaker_events WHERE skill = 'it_vpn_reset' AND from_state = 'closed'
AND to_state = 'open' AND at = $1`, hour.Add(17*time.Minute)).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("stored tripping: %d rows, %v; want 1 at the registry's clock", stored, err)
	}
	got, err := store.BreakerOpenings(ctx, pool, store.ChartRange{Since: hour, Until: hour.Add(2 * time.Hour), Step: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.BreakerOpeningPoint{{At: hour, Skill: "it_vpn_reset", Openings: 1}, {At: hour.Add(time.Hour), Skill: "it_vpn_reset", Openings: 1}}
	if !slices.EqualFunc(got, want, func(a, b store.BreakerOpeningPoint) bool {
		return a.At.Equal(b.At) && a.Skill == b.Skill && a.Openings == b.Openings
	}) {
		t.Errorf("openings %+v, want %+v", got, want)
	}
	if _, err := store.BreakerOpenings(ctx, pool, store.ChartRange{Since: hour, Until: hour, Step: time.Hour}); err == nil {
		t.Error("an empty range was accepted")
	}
}

// stuckDB is a database whose writes wait until released.
type stuckDB struct {
	store.Querier
	release chan struct{}
	mu      sync.Mutex
	writes  int
}

func (d *stuckDB) Exec(ctx context.Context, _ string, _ ...any) (pgconn.CommandTag, error) {
	<-d.release
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writes++
	return pgconn.NewCommandTag("INSERT 0 1"), nil
}

func (d *stuckDB) Query(context.Context, string, ...any) (pgx.Rows, error) { panic("not used") }

// TestBreakerRecorderNeverWaits: with the database stuck, Record still
// returns at once; past BreakerEventsInFlight writes under way the
// changes are dropped and counted, and the others are written once the
// database answers.
func TestBreakerRecorderNeverWaits(t *testing.T) {
	t.Parallel()
	db := &stuckDB{release: make(chan struct{})}
	rec := store.NewBreakerRecorder(db, slog.New(slog.DiscardHandler))
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for range store.BreakerEventsInFlight + 3 {
		rec.Record("it_vpn_reset", "closed", "open", at) // a blocking Record would hang the test here
	}
	if got := rec.Dropped(); got != 3 {
		t.Errorf("dropped %d changes, want 3", got)
	}
	close(db.release)
	rec.Wait()
	if db.writes != store.BreakerEventsInFlight {
		t.Errorf("%d changes written, want %d", db.writes, store.BreakerEventsInFlight)
	}
}
