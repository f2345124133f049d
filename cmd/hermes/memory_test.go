package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// memoryDB is a migrated database holding memories of two users of one
// corp, and the configuration naming it.
func memoryDB(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	url := storetest.URL(t)
	cfg := writeConfig(t, "database:\n  url: "+url+"\nmodel:\n  provider: offline\n")
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	now := time.Now()
	for _, m := range []memory.Memory{
		{Owner: memory.Owner{CorpID: "ww-acme", UserID: "wangxiao"}, Kind: memory.KindFact, Text: "我在上海办公室",
			Source: "inbound:7", CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(time.Hour)},
		{Owner: memory.Owner{CorpID: "ww-acme", UserID: "wangxiao"}, Kind: memory.KindOutcome, Text: "手机号 13812345678 已登记 VPN-1001",
			Source: "run:r1", CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour)},
		// Expired, not yet purged: not listed, but exported.
		{Owner: memory.Owner{CorpID: "ww-acme", UserID: "wangxiao"}, Kind: memory.KindFact, Text: "上周在北京出差",
			CreatedAt: now.Add(-3 * time.Hour), ExpiresAt: now.Add(-time.Minute)},
		{Owner: memory.Owner{CorpID: "ww-acme", UserID: "lisi"}, Kind: memory.KindFact, Text: "叫我老李",
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
	} {
		if _, err := memory.Add(context.Background(), pool, m); err != nil {
			t.Fatal(err)
		}
	}
	return pool, cfg
}

// memoryCmd runs `hermes memory SUB` for wangxiao as ops-zhang.
func memoryCmd(t *testing.T, cfg, sub string) string {
	t.Helper()
	code, out, errOut := runCmd(t, "", "memory", sub, "--config", cfg, "--corp", "ww-acme", "--user", "wangxiao", "--admin", "ops-zhang")
	if code != 0 {
		t.Fatalf("memory %s: exit %d: %s", sub, code, errOut)
	}
	return out
}

type auditRow struct {
	Admin, Action, CorpID, UserID string
	Count                         int
}

func auditRows(t *testing.T, pool *pgxpool.Pool) []auditRow {
	t.Helper()
	log, err := memory.AuditLog(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]auditRow, len(log))
	for i, e := range log {
		out[i] = auditRow{e.Admin, e.Action, e.Owner.CorpID, e.Owner.UserID, e.Count}
	}
	return out
}

func TestMemoryListExportPurge(t *testing.T) {
	t.Parallel()
	pool, cfg := memoryDB(t)

	out := memoryCmd(t, cfg, "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "1\tfact\t") || !strings.HasSuffix(lines[0], "\t我在上海办公室") ||
		!strings.HasPrefix(lines[1], "2\toutcome\t") {
		t.Fatalf("list:\n%s", out)
	}
	if strings.Contains(out, "13812345678") || !strings.Contains(out, "138****5678") {
		t.Errorf("list shows the mobile number unmasked:\n%s", out)
	}

	var exported []map[string]any
	if err := json.Unmarshal([]byte(memoryCmd(t, cfg, "export")), &exported); err != nil {
		t.Fatal(err)
	}
	if len(exported) != 3 {
		t.Fatalf("export has %d memories, want 3 (the expired one included): %v", len(exported), exported)
	}
	oldest, newest := exported[0], exported[2]
	if oldest["text"] != "上周在北京出差" || newest["text"] != "手机号 13812345678 已登记 VPN-1001" || newest["kind"] != "outcome" ||
		newest["source"] != "run:r1" || newest["used_at"] != nil || newest["created_at"] == nil || newest["expires_at"] == nil {
		t.Errorf("export: %v", exported)
	}
	for _, key := range []string{"id", "owner", "ID"} {
		if _, ok := oldest[key]; ok {
			t.Errorf("export has %q: %v", key, oldest)
		}
	}

	if out := memoryCmd(t, cfg, "purge"); !strings.Contains(out, "deleted 3 memories of ww-acme/wangxiao") {
		t.Errorf("purge: %s", out)
	}
	if out := memoryCmd(t, cfg, "list"); !strings.Contains(out, "no memories of ww-acme/wangxiao") {
		t.Errorf("list after purge: %s", out)
	}
	if left, err := memory.List(context.Background(), pool, memory.Owner{CorpID: "ww-acme", UserID: "lisi"}, time.Time{}); err != nil || len(left) != 1 {
		t.Errorf("another user's memories after the purge: %v, %v", left, err)
	}

	want := []auditRow{
		{"ops-zhang", "list", "ww-acme", "wangxiao", 2},
		{"ops-zhang", "export", "ww-acme", "wangxiao", 3},
		{"ops-zhang", "purge", "ww-acme", "wangxiao", 3},
		{"ops-zhang", "list", "ww-acme", "wangxiao", 0},
	}
	got := auditRows(t, pool)
	if len(got) != len(want) {
		t.Fatalf("audit rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("audit row %d = %v, want %v", i+1, got[i], want[i])
		}
	}
}

func TestMemoryAuditsTheOSUserByDefault(t *testing.T) {
	t.Parallel()
	pool, cfg := memoryDB(t)
	if code, _, errOut := runCmd(t, "", "memory", "list", "--config", cfg, "--corp", "ww-acme", "--user", "lisi"); code != 0 {
		t.Fatal(errOut)
	}
	if got := auditRows(t, pool); len(got) != 1 || got[0].Admin != defaultAdmin() || got[0].Admin == "" || got[0].Count != 1 {
		t.Errorf("audit rows %v, want one by %q", got, defaultAdmin())
	}
}

func TestMemoryUsage(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "database:\n  url: postgres://nobody@127.0.0.1:1/nothing\nmodel:\n  provider: offline\n")
	for name, args := range map[string][]string{
		"NoUser":     {"memory", "list", "--config", cfg, "--corp", "ww-acme"},
		"NoCorp":     {"memory", "export", "--config", cfg, "--user", "wangxiao"},
		"Positional": {"memory", "purge", "--config", cfg, "--corp", "ww-acme", "--user", "wangxiao", "extra"},
		"Unknown":    {"memory", "forget", "--config", cfg},
		"None":       {"memory"},
	} {
		if code, _, errOut := runCmd(t, "", args...); code != 2 || !strings.Contains(errOut, "usage") {
			t.Errorf("%s: exit %d, stderr %q; want 2 with usage", name, code, errOut)
		}
	}
	if code, out, _ := runCmd(t, "", "memory", "--help"); code != 0 || !strings.Contains(out, "export") {
		t.Errorf("memory --help: exit %d, %q", code, out)
	}
}
