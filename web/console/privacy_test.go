package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/memory"
)

// The data request buttons: an admin exports everything held about one
// employee (their memories here) as JSON and erases it, each audited; a
// viewer sees neither button and is refused both; an erasure needs the
// session's CSRF token.
func TestPrivacyExportAndEraseFromTheConsole(t *testing.T) {
	f := newFixture(t)
	base := f.srv.URL + "/console"
	now := time.Now()
	wang := memory.Owner{CorpID: "ww-acme", UserID: "wangxiao"}
	li := memory.Owner{CorpID: "ww-acme", UserID: "lisi"}
	for _, o := range []memory.Owner{wang, li} {
		if _, err := memory.Add(context.Background(), f.pool, memory.Memory{Owner: o, Kind: memory.KindFact, Text: "备注 " + o.UserID,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	who := url.Values{"corp": {wang.CorpID}, "user": {wang.UserID}}
	lookup, export := "/memories?"+who.Encode(), "/privacy/export?"+who.Encode()

	v := client(t)
	_, vcsrf := f.login(t, v, viewerUser, viewerPass)
	if _, body := get(t, v, base+lookup); strings.Contains(body, `id="privacy-export"`) || strings.Contains(body, `id="privacy-erase"`) {
		t.Errorf("a viewer sees the data request buttons")
	}
	if status, _ := get(t, v, base+export); status != http.StatusForbidden {
		t.Errorf("viewer's export: %d, want 403", status)
	}
	if status, _ := postForm(t, v, base+"/privacy/erase", url.Values{"csrf": {vcsrf}, "corp": who["corp"], "user": who["user"]}); status != http.StatusForbidden {
		t.Errorf("viewer's erase: %d, want 403", status)
	}

	c := client(t)
	_, csrf := f.login(t, c, adminUser, adminPass)
	if _, body := get(t, c, base+lookup); !strings.Contains(body, `id="privacy-export"`) || !strings.Contains(body, `id="privacy-erase"`) {
		t.Fatalf("the admin's lookup has no data request buttons:\n%s", body)
	}
	status, body := get(t, c, base+export)
	var e struct {
		Person   struct{ UserID string } `json:"person"`
		Memories []struct{ Text string } `json:"memories"`
	}
	if err := json.Unmarshal([]byte(body), &e); status != http.StatusOK || err != nil || e.Person.UserID != "wangxiao" ||
		len(e.Memories) != 1 || e.Memories[0].Text != "备注 wangxiao" {
		t.Fatalf("export: %d %v %s", status, err, body)
	}
	if status, _ := postForm(t, c, base+"/privacy/erase", url.Values{"csrf": {"forged"}, "corp": who["corp"], "user": who["user"]}); status != http.StatusForbidden {
		t.Errorf("erase with a forged csrf: %d, want 403", status)
	}
	resp, err := c.PostForm(base+"/privacy/erase", url.Values{"csrf": {csrf}, "corp": who["corp"], "user": who["user"]})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "erased=") {
		t.Errorf("erase: %d to %q, want 303 back to the lookup saying how much", resp.StatusCode, loc)
	} else if _, body := get(t, c, f.srv.URL+loc); !strings.Contains(body, `id="privacy-erased"`) {
		t.Errorf("the lookup after the erasure does not say so:\n%s", body)
	}
	if got := storedTexts(t, f.pool, wang); len(got) != 0 {
		t.Errorf("wangxiao's memories after the erasure: %v", got)
	}
	if got := storedTexts(t, f.pool, li); len(got) != 1 {
		t.Errorf("lisi's memories after wangxiao's erasure: %v", got)
	}
	rows := audits(t, f.pool)
	var actions []string
	for _, r := range rows {
		if r.Admin == adminUser && r.UserID == "wangxiao" && strings.HasPrefix(r.Action, "privacy_") {
			actions = append(actions, r.Action)
		}
	}
	if strings.Join(actions, ",") != "privacy_export,privacy_erase" {
		t.Errorf("audit of the data request: %v (all rows %+v)", actions, rows)
	}
}
