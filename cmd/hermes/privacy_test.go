package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPrivacyExportErase: `hermes privacy export` prints everything held
// about wangxiao (here his memories, expired ones included) as JSON,
// `hermes privacy erase` erases it, and each writes its audit row; after
// the erasure an export holds nothing. Bad usage exits 2.
func TestPrivacyExportErase(t *testing.T) {
	t.Parallel()
	pool, cfg := memoryDB(t)
	run := func(sub string) string {
		t.Helper()
		code, out, errOut := runCmd(t, "", "privacy", sub, "--config", cfg, "--corp", "ww-acme", "--user", "wangxiao", "--admin", "ops-zhang")
		if code != 0 {
			t.Fatalf("privacy %s: exit %d: %s", sub, code, errOut)
		}
		return out
	}
	var export struct {
		Person   struct{ CorpID, UserID string } `json:"person"`
		Memories []struct{ Text string }         `json:"memories"`
		Messages []any                           `json:"messages"`
	}
	if err := json.Unmarshal([]byte(run("export")), &export); err != nil {
		t.Fatal(err)
	}
	if export.Person.UserID != "wangxiao" || len(export.Memories) != 3 || export.Messages == nil {
		t.Fatalf("export: %+v", export)
	}
	if out := run("erase"); !strings.Contains(out, "memories\t3") {
		t.Fatalf("erase printed %q", out)
	}
	if err := json.Unmarshal([]byte(run("export")), &export); err != nil || len(export.Memories) != 0 {
		t.Fatalf("export after erase: %+v (err %v)", export, err)
	}
	want := []auditRow{{"ops-zhang", "privacy_export", "ww-acme", "wangxiao", 3}, {"ops-zhang", "privacy_erase", "ww-acme", "wangxiao", 3},
		{"ops-zhang", "privacy_export", "ww-acme", "wangxiao", 0}}
	got := auditRows(t, pool)
	if len(got) != len(want) {
		t.Fatalf("audit rows %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("audit row %d = %v, want %v", i+1, got[i], want[i])
		}
	}
	for name, args := range map[string][]string{
		"NoUser":  {"privacy", "erase", "--config", cfg, "--corp", "ww-acme"},
		"Unknown": {"privacy", "forget", "--config", cfg},
	} {
		if code, _, errOut := runCmd(t, "", args...); code != 2 || !strings.Contains(errOut, "usage") {
			t.Errorf("%s: exit %d, stderr %q; want 2 with usage", name, code, errOut)
		}
	}
}
