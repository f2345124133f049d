package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/web/console"
)

// auditRow is a memory_audit row without its id and time.
type auditRow struct {
	Admin, Action, CorpID, UserID string
	Count                         int
}

// audits are the memory_audit rows, oldest first.
func audits(t *testing.T, pool *pgxpool.Pool) []auditRow {
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

// storedTexts are the texts of every memory of o still stored, expired
// ones included.
func storedTexts(t *testing.T, pool *pgxpool.Pool, o memory.Owner) []string {
	t.Helper()
	ms, err := memory.List(context.Background(), pool, o, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Text
	}
	return out
}

// The memories page shows one employee's memories, masked, and nobody
// else's; viewing, exporting and deleting them are each audited under the
// signed-in account; deleting takes the session's CSRF token and an admin,
// and deletes that employee's memories only.
func TestMemoriesPageListsExportsAndPurgesOneUserAudited(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	base := f.srv.URL + "/console"
	now := time.Now()
	wang := memory.Owner{CorpID: "ww-acme", UserID: "wangxiao"}
	li := memory.Owner{CorpID: "ww-acme", UserID: "lisi"}         // another user of the same corp
	wang2 := memory.Owner{CorpID: "ww-other", UserID: "wangxiao"} // the same user id in another corp
	add := func(o memory.Owner, kind memory.Kind, text string, created, expires time.Time) {
		t.Helper()
		if _, err := memory.Add(ctx, f.pool, memory.Memory{Owner: o, Kind: kind, Text: text, Source: "inbound:1",
			CreatedAt: created, ExpiresAt: expires}); err != nil {
			t.Fatal(err)
		}
	}
	const (
		mobile   = "13812345678"
		idNumber = "110101199003071234"
	)
	add(wang, memory.KindFact, "我在上海办公室，手机 "+mobile, now.Add(-2*time.Hour), now.Add(180*24*time.Hour))
	add(wang, memory.KindOutcome, "已执行：提交了 VPN 申请 VPN-1001，身份证 "+idNumber, now.Add(-time.Hour), now.Add(180*24*time.Hour))
	// Expired, not yet purged: not shown, but exported and deleted.
	add(wang, memory.KindFact, "以前在北京办公室", now.Add(-400*24*time.Hour), now.Add(-220*24*time.Hour))
	add(li, memory.KindFact, "李四负责华北区", now.Add(-time.Hour), now.Add(180*24*time.Hour))
	add(wang2, memory.KindFact, "另一家公司的王小", now.Add(-time.Hour), now.Add(180*24*time.Hour))
	lookup := "/memories?" + url.Values{"corp": {wang.CorpID}, "user": {wang.UserID}}.Encode()
	export := "/memories/export?" + url.Values{"corp": {wang.CorpID}, "user": {wang.UserID}}.Encode()
	purge := url.Values{"corp": {wang.CorpID}, "user": {wang.UserID}}

	t.Run("SignedOut", func(t *testing.T) {
		c := client(t)
		for _, path := range []string{lookup, export} {
			resp, err := c.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/login" {
				t.Errorf("GET %s without a session: %d to %q, want 303 to the login", path, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
		form := url.Values{"csrf": {"x"}, "corp": {wang.CorpID}, "user": {wang.UserID}}
		if status, _ := postForm(t, c, base+"/memories/purge", form); status != http.StatusUnauthorized {
			t.Errorf("purge without a session: %d, want 401", status)
		}
		if got := audits(t, f.pool); len(got) != 0 {
			t.Errorf("signed-out requests wrote audit rows %+v", got)
		}
	})

	c := client(t)
	_, csrf := f.login(t, c, adminUser, adminPass)

	t.Run("EmptyLookupWritesNothing", func(t *testing.T) {
		status, body := get(t, c, base+"/memories")
		if status != http.StatusOK || !strings.Contains(body, `id="mem-user"`) || !strings.Contains(body, `href="/console/memories" class="on"`) {
			t.Errorf("bare memories page: %d, want 200 with the form and its menu entry on:\n%s", status, body)
		}
		if status, _ := get(t, c, base+"/memories?corp="+wang.CorpID); status != http.StatusBadRequest {
			t.Errorf("a corp without a user: %d, want 400", status)
		}
		if got := audits(t, f.pool); len(got) != 0 {
			t.Errorf("an empty lookup wrote audit rows %+v", got)
		}
	})

	t.Run("List", func(t *testing.T) {
		status, body := get(t, c, base+lookup)
		if status != http.StatusOK {
			t.Fatalf("lookup: %d", status)
		}
		for _, want := range []string{"我在上海办公室，手机 138****5678", "身份证 1101**********1234", "VPN-1001", "事实", "办理结果"} {
			if !strings.Contains(body, want) {
				t.Errorf("the lookup does not show %q:\n%s", want, body)
			}
		}
		for _, not := range []string{mobile, idNumber, "以前在北京办公室", "李四负责华北区", "另一家公司的王小"} {
			if strings.Contains(body, not) {
				t.Errorf("the lookup shows %q", not)
			}
		}
		if n := strings.Count(body, `<tr class="memory">`); n != 2 {
			t.Errorf("the lookup shows %d memories, want 2", n)
		}
		want := []auditRow{{adminUser, "list", wang.CorpID, wang.UserID, 2}}
		if got := audits(t, f.pool); !slices.Equal(got, want) {
			t.Errorf("audit after the lookup: %+v, want %+v", got, want)
		}
	})

	t.Run("Export", func(t *testing.T) {
		resp, err := c.Get(base + export)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
			resp.Header.Get("Content-Disposition") != `attachment; filename=memories-ww-acme-wangxiao.json` {
			t.Fatalf("export: %d, %q, %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"))
		}
		var got []map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("export is not a JSON list: %v\n%s", err, b)
		}
		var texts []string
		for _, m := range got {
			texts = append(texts, m["text"].(string))
			var keys []string
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if want := []string{"created_at", "expires_at", "kind", "source", "text", "used_at"}; !slices.Equal(keys, want) {
				t.Errorf("exported fields %v, want %v", keys, want)
			}
		}
		// Oldest first, whole (a data request is owed the text as held),
		// the expired one included, nobody else's.
		want := []string{"以前在北京办公室", "我在上海办公室，手机 " + mobile, "已执行：提交了 VPN 申请 VPN-1001，身份证 " + idNumber}
		if !slices.Equal(texts, want) {
			t.Errorf("exported texts %q, want %q", texts, want)
		}
		if got[2]["kind"] != "outcome" || got[2]["source"] != "inbound:1" || got[2]["used_at"] != nil {
			t.Errorf("exported outcome %+v", got[2])
		}
		rows := audits(t, f.pool)
		if last := rows[len(rows)-1]; last != (auditRow{adminUser, "export", wang.CorpID, wang.UserID, 3}) {
			t.Errorf("audit after the export: %+v, want export of 3 by %s", last, adminUser)
		}
	})

	t.Run("Viewer", func(t *testing.T) {
		v := client(t)
		_, vcsrf := f.login(t, v, viewerUser, viewerPass)
		status, body := get(t, v, base+lookup)
		if status != http.StatusOK || !strings.Contains(body, "138****5678") || !strings.Contains(body, `id="viewer-note"`) ||
			strings.Contains(body, `id="mem-export"`) || strings.Contains(body, `id="mem-purge"`) {
			t.Errorf("viewer's lookup: %d, want the masked list without export or delete:\n%s", status, body)
		}
		if status, _ := get(t, v, base+export); status != http.StatusForbidden {
			t.Errorf("viewer's export: %d, want 403", status)
		}
		if status, _ := postForm(t, v, base+"/memories/purge", url.Values{"csrf": {vcsrf}, "corp": {wang.CorpID}, "user": {wang.UserID}}); status != http.StatusForbidden {
			t.Errorf("viewer's purge: %d, want 403", status)
		}
		rows := audits(t, f.pool)
		if last := rows[len(rows)-1]; last != (auditRow{viewerUser, "list", wang.CorpID, wang.UserID, 2}) {
			t.Errorf("last audit row %+v, want the viewer's list of 2", last)
		}
	})

	t.Run("PurgeNeedsCSRF", func(t *testing.T) {
		before := len(audits(t, f.pool))
		for _, form := range []url.Values{purge, {"csrf": {"forged"}, "corp": purge["corp"], "user": purge["user"]}} {
			if status, _ := postForm(t, c, base+"/memories/purge", form); status != http.StatusForbidden {
				t.Errorf("purge with csrf %q: %d, want 403", form.Get("csrf"), status)
			}
		}
		if n := len(storedTexts(t, f.pool, wang)); n != 3 {
			t.Errorf("a refused purge left %d of 3 memories", n)
		}
		if n := len(audits(t, f.pool)); n != before {
			t.Errorf("a refused purge wrote %d audit rows", n-before)
		}
	})

	t.Run("Purge", func(t *testing.T) {
		form := url.Values{"csrf": {csrf}, "corp": purge["corp"], "user": purge["user"]}
		resp, err := c.PostForm(base+"/memories/purge", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		back := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(back, "/console/memories?") {
			t.Fatalf("purge: %d to %q, want 303 back to the lookup", resp.StatusCode, back)
		}
		if got := storedTexts(t, f.pool, wang); len(got) != 0 {
			t.Errorf("after the purge %s still has %q", wang.UserID, got)
		}
		if got := storedTexts(t, f.pool, li); !slices.Equal(got, []string{"李四负责华北区"}) {
			t.Errorf("the purge touched another user: %q", got)
		}
		if got := storedTexts(t, f.pool, wang2); !slices.Equal(got, []string{"另一家公司的王小"}) {
			t.Errorf("the purge touched the same user id in another corp: %q", got)
		}
		rows := audits(t, f.pool)
		if last := rows[len(rows)-1]; last != (auditRow{adminUser, "purge", wang.CorpID, wang.UserID, 3}) {
			t.Errorf("audit after the purge: %+v, want purge of 3 by %s", last, adminUser)
		}
		status, body := get(t, c, f.srv.URL+back)
		if status != http.StatusOK || !strings.Contains(body, "已删除 3 条记忆") || strings.Contains(body, `<tr class="memory">`) {
			t.Errorf("the lookup after the purge: %d, want none and the count deleted:\n%s", status, body)
		}
	})
}

// The memories page's words are overridable like the others
// (messages.console).
func TestMemoriesTextsOverridable(t *testing.T) {
	over := map[string]map[string]string{"zh": {"memories": "员工记忆"}, "en": {"delete_all": "Forget everything"}}
	if err := console.CheckTexts(over); err != nil {
		t.Fatal(err)
	}
	all := console.Catalogue(over)
	if all["zh"]["memories"] != "员工记忆" || all["en"]["delete_all"] != "Forget everything" || all["en"]["memories"] != "Memories" {
		t.Errorf("catalogue with overrides: zh %q, en %q / %q", all["zh"]["memories"], all["en"]["delete_all"], all["en"]["memories"])
	}
}
