package knowledge_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// folderBase is a knowledge base kept in step with a new folder, its log
// in the returned buffer.
func folderBase(t *testing.T, pool *pgxpool.Pool) (*knowledge.Base, string, *chantest.LogBuffer) {
	t.Helper()
	dir := t.TempDir()
	logs := &chantest.LogBuffer{}
	kb := knowledge.NewBase(pool, config.KnowledgeConfig{Dir: dir, Corps: []string{corp}},
		slog.New(slog.NewTextHandler(logs, nil)), func() time.Time { return t0 })
	return kb, dir, logs
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sync1(t *testing.T, kb *knowledge.Base) knowledge.Synced {
	t.Helper()
	out, err := kb.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// folderDocs are the titles of the stored documents and their passages.
func folderDocs(t *testing.T, pool *pgxpool.Pool) (titles []string, chunks int) {
	t.Helper()
	docs, err := knowledge.List(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		titles = append(titles, d.Title)
		chunks += d.Chunks
	}
	slices.Sort(titles)
	return titles, chunks
}

func TestFolderSyncAddsChangesAndRemoves(t *testing.T) {
	pool := storetest.NewPool(t)
	kb, dir, _ := folderBase(t, pool)
	write(t, dir, "休假制度.md", leave)
	write(t, dir, "hr/薪酬等级表.md", salary)
	write(t, dir, "hr/薪酬等级表.md.yaml", "title: 薪酬等级表\nversion: 2026版\naccess:\n  departments: [\"9\"]\n")
	write(t, dir, ".draft.md", "# 草稿\n\n未发布。\n")

	out := sync1(t, kb)
	if !slices.Equal(out.Added, []string{"hr/薪酬等级表.md", "休假制度.md"}) || len(out.Refused) != 0 {
		t.Fatalf("first sync: %+v", out)
	}
	if got := joined(search(t, pool, zhang, "总监月薪上限 薪酬等级表")); strings.Contains(got, "58000") {
		t.Fatalf("the sidecar's audience was not applied: %q", got)
	}
	if got := joined(search(t, pool, hrStaff, "总监月薪上限")); !strings.Contains(got, "58000") {
		t.Fatalf("HR does not find the folder's salary table: %q", got)
	}
	t.Run("Unchanged", func(t *testing.T) {
		out := sync1(t, kb)
		if len(out.Added)+len(out.Changed)+len(out.Removed) != 0 || out.Unchanged != 2 {
			t.Fatalf("second sync of the same folder: %+v", out)
		}
	})
	t.Run("Changed", func(t *testing.T) {
		write(t, dir, "休假制度.md", strings.Replace(leave, "婚假 3 天", "婚假 10 天", 1))
		out := sync1(t, kb)
		if !slices.Equal(out.Changed, []string{"休假制度.md"}) {
			t.Fatalf("sync: %+v", out)
		}
		got := joined(search(t, pool, zhang, "婚假几天"))
		if !strings.Contains(got, "婚假 10 天") || strings.Contains(got, "婚假 3 天") {
			t.Fatalf("the changed file's old text is still searched: %q", got)
		}
		if titles, _ := folderDocs(t, pool); len(titles) != 2 {
			t.Fatalf("documents: %v", titles)
		}
	})
	t.Run("SidecarChanged", func(t *testing.T) {
		write(t, dir, "hr/薪酬等级表.md.yaml", "title: 薪酬等级表\nversion: 2026版\n")
		if out := sync1(t, kb); !slices.Equal(out.Changed, []string{"hr/薪酬等级表.md"}) {
			t.Fatalf("sync: %+v", out)
		}
		if got := joined(search(t, pool, zhang, "总监月薪上限")); !strings.Contains(got, "58000") {
			t.Fatalf("the audience widened by the sidecar is not applied: %q", got)
		}
	})
	t.Run("Removed", func(t *testing.T) {
		if err := os.Remove(filepath.Join(dir, "hr/薪酬等级表.md")); err != nil {
			t.Fatal(err)
		}
		if out := sync1(t, kb); !slices.Equal(out.Removed, []string{"hr/薪酬等级表.md"}) {
			t.Fatalf("sync: %+v", out)
		}
		titles, chunks := folderDocs(t, pool)
		var left int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM knowledge_chunks`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(titles, []string{"休假制度"}) || left != chunks {
			t.Fatalf("documents %v, passages %d of %d", titles, left, chunks)
		}
	})
}

func TestFolderSyncRefusesAFileByNameAndChangesNothingElse(t *testing.T) {
	pool := storetest.NewPool(t)
	kb, dir, logs := folderBase(t, pool)
	kb.MaxBytes = 4 << 10
	write(t, dir, "休假制度.md", leave)
	write(t, dir, "差旅.md", "# 差旅\n\n## 住宿\n\n一线城市每晚 550 元。\n")
	sync1(t, kb)

	write(t, dir, "休假制度.md", strings.Replace(leave, "婚假 3 天", "婚假 10 天", 1))
	write(t, dir, "休假制度.md.yaml", "titel: 休假制度\n") // a typo: refused, not ignored
	write(t, dir, "scan.pdf", "%PDF-1.7\nnot a pdf at all")
	write(t, dir, "huge.txt", strings.Repeat("大", 4<<10))
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "新人指南.md", "# 新人指南\n\n## 工牌\n\n入职当天到前台领取工牌。\n")
	if err := os.Remove(filepath.Join(dir, "差旅.md")); err != nil {
		t.Fatal(err)
	}
	out := sync1(t, kb)

	for _, name := range []string{"休假制度.md", "scan.pdf", "huge.txt", "passwd.txt"} {
		err, ok := out.Refused[name]
		if !ok || !errors.Is(err, knowledge.ErrRefused) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: refused %v (%v)", name, ok, err)
		}
		if !strings.Contains(logs.String(), name) {
			t.Errorf("%s not named in the log", name)
		}
	}
	if !slices.Equal(out.Added, []string{"新人指南.md"}) || !slices.Equal(out.Removed, []string{"差旅.md"}) || len(out.Changed) != 0 {
		t.Fatalf("the refused files stopped the rest: %+v", out)
	}
	if got := joined(search(t, pool, zhang, "婚假几天")); !strings.Contains(got, "婚假 3 天") {
		t.Fatalf("a refused change dropped the previous version: %q", got)
	}
	if got := joined(search(t, pool, zhang, "root passwd")); got != "" {
		t.Fatalf("a link out of the folder was read: %q", got)
	}
}

func TestFolderSyncWithoutItsFolderRemovesNothing(t *testing.T) {
	pool := storetest.NewPool(t)
	kb, dir, _ := folderBase(t, pool)
	write(t, dir, "休假制度.md", leave)
	sync1(t, kb)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.Sync(context.Background()); err == nil {
		t.Fatal("a missing folder synced")
	}
	if titles, _ := folderDocs(t, pool); len(titles) != 1 {
		t.Fatalf("an unmounted folder emptied the index: %v", titles)
	}
}

func TestTwoReplicasSyncTheFolderOnce(t *testing.T) {
	pool := storetest.NewPool(t)
	a, dir, _ := folderBase(t, pool)
	b := knowledge.NewBase(pool, a.Cfg, a.Log, a.Now)
	for i, text := range []string{leave, salary, "# 差旅\n\n## 住宿\n\n一线城市每晚 550 元。\n"} {
		write(t, dir, string(rune('a'+i))+".md", text)
	}
	var wg sync.WaitGroup
	outs := make([]knowledge.Synced, 2)
	for i, kb := range []*knowledge.Base{a, b} {
		wg.Go(func() { outs[i] = sync1(t, kb) })
	}
	wg.Wait()
	added := append(outs[0].Added, outs[1].Added...)
	slices.Sort(added)
	if !slices.Equal(added, []string{"a.md", "b.md", "c.md"}) || outs[0].Unchanged+outs[1].Unchanged != 3 {
		t.Fatalf("replicas: %+v / %+v", outs[0], outs[1])
	}
	if titles, _ := folderDocs(t, pool); len(titles) != 3 {
		t.Fatalf("documents after two replicas synced: %v", titles)
	}
}
