package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

func TestMigrateConcurrentReplicas(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	// Already migrated by the harness; five replicas starting at once must
	// all succeed and change nothing.
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	for range 5 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- store.Migrate(ctx, pool) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
}

func TestInsertInboundDedupes(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	in := channels.Inbound{Channel: "wecom", Account: "app", MsgID: "42", MsgType: "text", ChatID: "u", ChatType: "single",
		Sender: channels.Identity{UserID: "u"}, Text: "hi"}
	id, inserted, err := store.InsertInbound(ctx, pool, in, store.InboundPending)
	if err != nil || !inserted || id == 0 {
		t.Fatalf("first insert: id=%d inserted=%v err=%v", id, inserted, err)
	}
	_, inserted, err = store.InsertInbound(ctx, pool, in, store.InboundPending)
	if err != nil || inserted {
		t.Fatalf("second insert: inserted=%v err=%v, want a no-op", inserted, err)
	}
	in.Account = "other-app"
	if _, inserted, _ := store.InsertInbound(ctx, pool, in, store.InboundPending); !inserted {
		t.Fatal("same msg id in another account must be a new message")
	}
}

func TestTokenCacheSealsAndExpires(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	c, err := store.NewTokenCache(pool, "app-secret", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	// A fetch that fails shows whether a read hit the cache: Token calls
	// fetch only on a miss.
	errMiss := errors.New("miss")
	miss := func(context.Context) (string, time.Duration, error) { return "", 0, errMiss }
	if _, err := c.Token(ctx, "k", func(context.Context) (string, time.Duration, error) { return "token-value", time.Hour, nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Token(ctx, "k", miss); err != nil || got != "token-value" {
		t.Fatalf("Get = %v, %v, want token-value", got, err)
	}
	var stored []byte
	if err := pool.QueryRow(ctx, `SELECT value FROM token_cache WHERE key = 'k'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if string(stored) == "token-value" || containsBytes(stored, []byte("token-value")) {
		t.Fatal("token stored in the clear")
	}
	other, _ := store.NewTokenCache(pool, "another-secret", func() time.Time { return now })
	if got, err := other.Token(ctx, "k", miss); !errors.Is(err, errMiss) {
		t.Fatalf("a cache with another secret read %v", got)
	}
	now = now.Add(2 * time.Hour)
	if got, err := c.Token(ctx, "k", miss); !errors.Is(err, errMiss) {
		t.Fatalf("expired value returned: %v", got)
	}
	if err := c.Invalidate(ctx, "k", "token-value"); err != nil {
		t.Fatal(err)
	}
}

func containsBytes(haystack, needle []byte) bool {
	for i := 0; i+len(needle) <= len(haystack); i++ {
		if string(haystack[i:i+len(needle)]) == string(needle) {
			return true
		}
	}
	return false
}

func TestArchiveIsPerRun(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	a := store.Archive{Pool: pool}
	ref, err := a.Put(ctx, "run-1", "很长的观察结果")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := a.Put(ctx, "run-1", "很长的观察结果"); again != ref {
		t.Fatalf("same text archived under %q and %q", ref, again)
	}
	if got, err := a.Get(ctx, "run-1", ref); err != nil || got != "很长的观察结果" {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if _, err := a.Get(ctx, "run-2", ref); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another run read the archive: %v", err)
	}
}

// Two replicas refused with the same expired token at once refresh it
// once: the first invalidates and fetches, the second finds the new token.
func TestTokenExpiryRefreshedOnceAcrossReplicas(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	var mu sync.Mutex
	fetches := 0
	fetch := func(context.Context) (string, time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		fetches++
		return "token-" + string(rune('0'+fetches)), 2 * time.Hour, nil
	}
	var replicas [2]*store.TokenCache
	for i := range replicas {
		c, err := store.NewTokenCache(pool, "app-secret", nil)
		if err != nil {
			t.Fatal(err)
		}
		replicas[i] = c
	}
	first, err := replicas[0].Token(ctx, "k", fetch)
	if err != nil || first != "token-1" {
		t.Fatalf("first token %q, %v", first, err)
	}
	if got, _ := replicas[1].Token(ctx, "k", fetch); got != first || fetches != 1 {
		t.Fatalf("second replica got %q after %d fetches, want the shared token", got, fetches)
	}
	// Both are told the token expired, at the same time.
	var wg sync.WaitGroup
	got := make([]string, 2)
	for i, c := range replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Invalidate(ctx, "k", first); err != nil {
				t.Error(err)
			}
			got[i], _ = c.Token(ctx, "k", fetch)
		}()
	}
	wg.Wait()
	if fetches != 2 || got[0] != "token-2" || got[1] != "token-2" {
		t.Fatalf("after expiry: %d fetches, tokens %q; want one refresh shared", fetches, got)
	}
}

// A database at the latest schema is recognised without the migration
// lock: a replica starting while another holds it (migrating, or stuck)
// is not held up.
func TestMigrateUpToDateTakesNoLock(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(x'6865726d6573'::bigint)`); err != nil {
		t.Fatal(err)
	}
	defer holder.Exec(ctx, `SELECT pg_advisory_unlock(x'6865726d6573'::bigint)`) //nolint:errcheck
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := store.Migrate(short, pool); err != nil {
		t.Fatalf("migrate of an up-to-date database while the lock is held: %v", err)
	}
}

// A replica reads a token from the table once per lifetime, not once per
// send: later reads come from its memory (issue 39), until the platform
// refuses the token and Invalidate drops the copy.
func TestTokenReadFromTheTableOncePerReplica(t *testing.T) {
	pool := storetest.NewPool(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	c, err := store.NewTokenCache(pool, "app-secret", func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	fetches := 0
	fetch := func(context.Context) (string, time.Duration, error) {
		fetches++
		return fmt.Sprintf("token-%d", fetches), time.Hour, nil
	}
	if _, err := c.Token(ctx, "k", fetch); err != nil {
		t.Fatal(err)
	}
	// With the table's row gone, only the memory can answer.
	if _, err := pool.Exec(ctx, `DELETE FROM token_cache`); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Token(ctx, "k", fetch); err != nil || got != "token-1" || fetches != 1 {
		t.Fatalf("second read = %q, %v after %d fetches; want token-1 from memory", got, err, fetches)
	}
	if err := c.Invalidate(ctx, "k", "token-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Token(ctx, "k", fetch); got != "token-2" {
		t.Fatalf("after the platform refused token-1: %q, want a fresh token", got)
	}
	now = now.Add(time.Hour) // past renewBefore: the memory's copy expired too
	if got, _ := c.Token(ctx, "k", fetch); got != "token-3" {
		t.Fatalf("after expiry: %q, want a fresh token", got)
	}
}

// A burst of sends finding no token in a replica's memory costs the pool
// one reader, not one per send: the others wait for its result. And a
// token fetched while Postgres cannot store it is still used and kept in
// memory.
func TestTokenMissesOfOneReplicaShareOneRead(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	c, err := store.NewTokenCache(pool, "app-secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	var fetches atomic.Int32
	fetch := func(context.Context) (string, time.Duration, error) {
		fetches.Add(1)
		return "token-value", time.Hour, nil
	}
	before := pool.Stat().AcquireCount()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if got, err := c.Token(ctx, "k", fetch); err != nil || got != "token-value" {
				t.Errorf("Token = %q, %v", got, err)
			}
		})
	}
	wg.Wait()
	// One miss: a read, the lock (its connection), a read under it, the write.
	if n := pool.Stat().AcquireCount() - before; n > 4 || fetches.Load() != 1 {
		t.Errorf("20 sends at once took %d connections and %d fetches, want at most 4 and 1", n, fetches.Load())
	}

	if _, err := pool.Exec(ctx, `ALTER TABLE token_cache RENAME TO token_cache_gone`); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Token(ctx, "other", fetch); err != nil || got != "token-value" {
		t.Fatalf("Token with the cache unwritable = %q, %v, want the fetched token", got, err)
	}
	if got, err := c.Token(ctx, "other", func(context.Context) (string, time.Duration, error) {
		return "", 0, errors.New("fetched again")
	}); err != nil || got != "token-value" {
		t.Fatalf("Token after = %q, %v, want the token kept in memory", got, err)
	}
}
