package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// t0 is the tests' present.
var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

var (
	wang  = memory.Owner{CorpID: "ww-acme", UserID: "wangxiao"}
	li    = memory.Owner{CorpID: "ww-acme", UserID: "lisi"}       // another user of the same corp
	wang2 = memory.Owner{CorpID: "ww-other", UserID: wang.UserID} // the same user id in another corp
	year  = 365 * 24 * time.Hour
)

// add stores a fact of o created at, for a year, and returns its id.
func add(t *testing.T, pool *pgxpool.Pool, o memory.Owner, text string, at time.Time) int64 {
	t.Helper()
	id, err := memory.Add(context.Background(), pool, memory.Memory{Owner: o, Kind: memory.KindFact, Text: text,
		Source: "inbound:1", CreatedAt: at, ExpiresAt: at.Add(year)})
	if err != nil {
		t.Fatalf("add %q: %v", text, err)
	}
	return id
}

// texts are the memories' texts, in order.
func texts(ms []memory.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

func list(t *testing.T, pool *pgxpool.Pool, o memory.Owner, now time.Time) []string {
	t.Helper()
	ms, err := memory.List(context.Background(), pool, o, now)
	if err != nil {
		t.Fatal(err)
	}
	return texts(ms)
}

func recall(t *testing.T, pool *pgxpool.Pool, o memory.Owner, query string, now time.Time) []memory.Memory {
	t.Helper()
	ms, err := memory.Recall(context.Background(), pool, o, query, 5, now)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestAddListOldestFirst(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	add(t, pool, wang, "叫我小王", t0.Add(2*time.Minute))
	add(t, pool, wang, "我在上海办公室", t0)
	add(t, pool, wang, "2026-12-01 提交了 VPN 申请 VPN-1001", t0.Add(time.Minute))
	ms, err := memory.List(context.Background(), pool, wang, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"我在上海办公室", "2026-12-01 提交了 VPN 申请 VPN-1001", "叫我小王"}
	if got := texts(ms); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("list = %q, want %q", got, want)
	}
	m := ms[0]
	if m.Owner != wang || m.Kind != memory.KindFact || m.Source != "inbound:1" || !m.CreatedAt.Equal(t0) ||
		!m.ExpiresAt.Equal(t0.Add(year)) || m.UsedAt != nil || m.ID == 0 {
		t.Errorf("first memory read back as %+v", m)
	}
}

func TestAddSameTextRefreshesOneRow(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	id := add(t, pool, wang, "我在上海办公室", t0)
	add(t, pool, wang, "叫我小王", t0.Add(time.Minute))
	later := t0.Add(time.Hour)
	again, err := memory.Add(ctx, pool, memory.Memory{Owner: wang, Kind: memory.KindOutcome, Text: " 我在上海办公室\n",
		Source: "run:r2", CreatedAt: later, ExpiresAt: later.Add(2 * year)})
	if err != nil || again != id {
		t.Fatalf("add again = %d, %v; want the first row's id %d", again, err, id)
	}
	ms, err := memory.List(ctx, pool, wang, later)
	if err != nil || len(ms) != 2 {
		t.Fatalf("list = %d memories, %v; want 2", len(ms), err)
	}
	// Refreshed: now the newest, with the new kind, source and expiry.
	m := ms[1]
	if m.ID != id || m.Kind != memory.KindOutcome || m.Source != "run:r2" || !m.CreatedAt.Equal(later) || !m.ExpiresAt.Equal(later.Add(2*year)) {
		t.Errorf("refreshed row = %+v", m)
	}
}

func TestOwnersAreIsolated(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	add(t, pool, wang, "2026-12-01 提交了 VPN 申请 VPN-1001", t0)
	for _, o := range []memory.Owner{li, wang2} {
		if got := list(t, pool, o, t0); len(got) != 0 {
			t.Errorf("%v lists %q", o, got)
		}
		if got := recall(t, pool, o, "VPN 申请", t0); len(got) != 0 {
			t.Errorf("%v recalls %q", o, texts(got))
		}
	}
	if got := recall(t, pool, wang, "VPN 申请", t0); len(got) != 1 {
		t.Errorf("the owner recalls %q", texts(got))
	}
}

func TestDeleteOnlyTheOwners(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	mine := add(t, pool, wang, "我在上海办公室", t0)
	kept := add(t, pool, wang, "叫我小王", t0.Add(time.Minute))
	theirs := add(t, pool, li, "我在北京办公室", t0)
	n, err := memory.Delete(ctx, pool, wang, []int64{mine, theirs})
	if err != nil || n != 1 {
		t.Fatalf("delete = %d, %v; want 1", n, err)
	}
	if got := mustList(t, pool, wang, t0); len(got) != 1 || got[0].ID != kept {
		t.Errorf("owner's memories after delete: %q", texts(got))
	}
	if got := list(t, pool, li, t0); len(got) != 1 {
		t.Errorf("another owner's memory deleted: %q", got)
	}
	if n, err := memory.Delete(ctx, pool, wang, nil); err != nil || n != 0 {
		t.Errorf("delete of no ids = %d, %v", n, err)
	}
}

func TestDeleteAll(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	add(t, pool, wang, "我在上海办公室", t0)
	add(t, pool, wang, "叫我小王", t0)
	add(t, pool, wang2, "我在深圳办公室", t0)
	n, err := memory.DeleteAll(context.Background(), pool, wang)
	if err != nil || n != 2 {
		t.Fatalf("delete all = %d, %v; want 2", n, err)
	}
	if got := list(t, pool, wang, t0); len(got) != 0 {
		t.Errorf("left: %q", got)
	}
	if got := list(t, pool, wang2, t0); len(got) != 1 {
		t.Errorf("the same user id in another corp lost its memories: %q", got)
	}
}

func TestRecallRanksBySharedTerms(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	vpn := "2026-12-01 提交了 VPN 申请 VPN-1001"
	add(t, pool, wang, vpn, t0)
	add(t, pool, wang, "叫我小王", t0.Add(time.Minute))
	add(t, pool, wang, "我在上海办公室", t0.Add(2*time.Minute))
	add(t, pool, wang, "VPN 客户端装在 D 盘", t0.Add(3*time.Minute))
	now := t0.Add(time.Hour)

	got := recall(t, pool, wang, "我的 VPN 申请", now)
	// The VPN application shares vpn and 申请, the client only vpn: the
	// application first although older; 叫我小王 shares nothing.
	if want := []string{vpn, "VPN 客户端装在 D 盘"}; strings.Join(texts(got), "|") != strings.Join(want, "|") {
		t.Fatalf("recall = %q, want %q", texts(got), want)
	}
	for _, m := range got {
		if m.UsedAt == nil || !m.UsedAt.Equal(now) {
			t.Errorf("%q: used_at %v, want %v", m.Text, m.UsedAt, now)
		}
	}
	for _, m := range mustList(t, pool, wang, now) {
		if used := m.UsedAt != nil; used != (m.Text == vpn || strings.HasPrefix(m.Text, "VPN")) {
			t.Errorf("%q: used_at %v after the recall", m.Text, m.UsedAt)
		}
	}
	if got := recall(t, pool, wang, "上海办公室在几楼", now); len(got) != 1 || got[0].Text != "我在上海办公室" {
		t.Errorf("recall of the office = %q", texts(got))
	}
	for _, q := range []string{"", "   ", "我的吗", "天气怎么样"} {
		if got := recall(t, pool, wang, q, now); len(got) != 0 {
			t.Errorf("recall %q = %q, want none", q, texts(got))
		}
	}
}

func TestRecallTiesGoToTheNewestAndLimit(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	for i, city := range []string{"北京", "上海", "深圳", "广州", "杭州", "成都", "武汉"} {
		add(t, pool, wang, "出差去"+city+"办公室", t0.Add(time.Duration(i)*time.Minute))
	}
	got, err := memory.Recall(context.Background(), pool, wang, "办公室", 3, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"出差去武汉办公室", "出差去成都办公室", "出差去杭州办公室"}
	if strings.Join(texts(got), "|") != strings.Join(want, "|") {
		t.Errorf("recall = %q, want the 3 newest %q", texts(got), want)
	}
}

func TestExpiredAreHiddenThenPurged(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	if _, err := memory.Add(ctx, pool, memory.Memory{Owner: wang, Kind: memory.KindOutcome, Text: "提交了 VPN 申请 VPN-1001",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	add(t, pool, wang, "VPN 客户端装在 D 盘", t0)
	after := t0.Add(2 * time.Hour)
	if got := list(t, pool, wang, after); len(got) != 1 || got[0] != "VPN 客户端装在 D 盘" {
		t.Errorf("list after expiry = %q", got)
	}
	if got := recall(t, pool, wang, "VPN 申请", after); len(got) != 1 || got[0].Text != "VPN 客户端装在 D 盘" {
		t.Errorf("recall after expiry = %q", texts(got))
	}
	// Still stored until purged: the zero time lists it.
	if got := list(t, pool, wang, time.Time{}); len(got) != 2 {
		t.Errorf("list at the zero time = %q, want both", got)
	}
	n, err := memory.Purge(ctx, pool, after)
	if err != nil || n != 1 {
		t.Fatalf("purge = %d, %v; want 1", n, err)
	}
	if got := list(t, pool, wang, time.Time{}); len(got) != 1 {
		t.Errorf("after purge: %q", got)
	}
}

func TestAddRejectsBadMemories(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	ok := memory.Memory{Owner: wang, Kind: memory.KindFact, Text: "叫我小王", CreatedAt: t0, ExpiresAt: t0.Add(year)}
	long := strings.Repeat("很", memory.MaxTextBytes/3+1) // 3 bytes each
	for name, tc := range map[string]struct {
		edit func(*memory.Memory)
		want error
	}{
		"TooLong":  {func(m *memory.Memory) { m.Text = long }, memory.ErrTooLong},
		"Empty":    {func(m *memory.Memory) { m.Text = " \n\t" }, memory.ErrEmpty},
		"BadKind":  {func(m *memory.Memory) { m.Kind = "secret" }, memory.ErrBadKind},
		"NoUser":   {func(m *memory.Memory) { m.Owner.UserID = "" }, memory.ErrNoOwner},
		"NoExpiry": {func(m *memory.Memory) { m.ExpiresAt = time.Time{} }, memory.ErrBadTimes},
	} {
		m := ok
		tc.edit(&m)
		if _, err := memory.Add(ctx, pool, m); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", name, err, tc.want)
		}
	}
	if got := list(t, pool, wang, time.Time{}); len(got) != 0 {
		t.Errorf("a rejected memory was stored: %q", got)
	}
	// Exactly MaxTextBytes is fine.
	ok.Text = strings.Repeat("很", memory.MaxTextBytes/3)
	if _, err := memory.Add(ctx, pool, ok); err != nil {
		t.Errorf("%d bytes: %v", len(ok.Text), err)
	}
	// No corp is a corp of its own: stored, and not wang's.
	noCorp := memory.Owner{UserID: wang.UserID}
	ok.Owner = noCorp
	if _, err := memory.Add(ctx, pool, ok); err != nil {
		t.Errorf("without a corp id: %v", err)
	}
	if got := list(t, pool, noCorp, t0); len(got) != 1 {
		t.Errorf("the owner without a corp lists %q", got)
	}
	if got := list(t, pool, wang, t0); len(got) != 1 {
		t.Errorf("wang lists %q", got)
	}
}

func TestAuditWritesARow(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	if err := memory.Audit(ctx, pool, "ops-zhang", "export", wang, 3, t0); err != nil {
		t.Fatal(err)
	}
	var admin, action, corp, user string
	var count int
	var at time.Time
	err := pool.QueryRow(ctx, `SELECT admin, action, corp_id, user_id, count, at FROM memory_audit`).
		Scan(&admin, &action, &corp, &user, &count, &at)
	if err != nil {
		t.Fatal(err)
	}
	if admin != "ops-zhang" || action != "export" || corp != wang.CorpID || user != wang.UserID || count != 3 || !at.Equal(t0) {
		t.Errorf("audit row: %s %s %s/%s %d %v", admin, action, corp, user, count, at)
	}
}

func mustList(t *testing.T, pool *pgxpool.Pool, o memory.Owner, now time.Time) []memory.Memory {
	t.Helper()
	ms, err := memory.List(context.Background(), pool, o, now)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
