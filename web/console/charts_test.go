package console_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/web/console"
)

// chartRows returns the rows of the table below chart id in body, cells
// trimmed.
func chartRows(t *testing.T, body, id string) [][]string {
	t.Helper()
	i := strings.Index(body, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no chart %s on the page", id)
	}
	section := body[i:]
	if j := strings.Index(section, "</figure>"); j >= 0 {
		section = section[:j]
	}
	var rows [][]string
	for _, tr := range regexp.MustCompile(`(?s)<tr>(.*?)</tr>`).FindAllStringSubmatch(section, -1) {
		var row []string
		for _, td := range regexp.MustCompile(`(?s)<t[dh][^>]*>(.*?)</t[dh]>`).FindAllStringSubmatch(tr[1], -1) {
			// A cell's text, without the drill-down link around it.
			row = append(row, strings.TrimSpace(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(td[1], "")))
		}
		rows = append(rows, row)
	}
	return rows
}

// sumColumn adds up the numbers of the column named col (header row
// first).
func sumColumn(t *testing.T, rows [][]string, col string) int {
	t.Helper()
	if len(rows) == 0 {
		t.Fatal("empty table")
	}
	k := -1
	for i, h := range rows[0] {
		if h == col {
			k = i
		}
	}
	if k < 0 {
		t.Fatalf("no column %q in %q", col, rows[0])
	}
	n := 0
	for _, r := range rows[1:] {
		var v int
		for _, ch := range r[k] {
			if ch >= '0' && ch <= '9' {
				v = v*10 + int(ch-'0')
			}
		}
		n += v
	}
	return n
}

// TestChartsAfterTraffic: the overview's and the skills page's charts
// count the fixture's message, run and skill call, an SVG is drawn, and a
// viewer sees them too; the tokens table prices the model from costs.
func TestChartsAfterTraffic(t *testing.T) {
	f := newFixture(t)
	for _, who := range []struct{ user, pass string }{{adminUser, adminPass}, {viewerUser, viewerPass}} {
		c := client(t)
		f.login(t, c, who.user, who.pass)
		for _, period := range []string{"24h", "7d"} {
			status, body := get(t, c, f.srv.URL+"/console/?trend="+period)
			if status != http.StatusOK || !strings.Contains(body, `<svg`) {
				t.Fatalf("%s overview %s: %d, svg %v", who.user, period, status, strings.Contains(body, "<svg"))
			}
			if n := sumColumn(t, chartRows(t, body, "chart-traffic"), "test / acc-1"); n != 1 {
				t.Errorf("%s %s: traffic chart counts %d messages, want 1", who.user, period, n)
			}
			if n := sumColumn(t, chartRows(t, body, "chart-stops"), "完成"); n != 1 {
				t.Errorf("%s %s: stop chart counts %d finished runs, want 1", who.user, period, n)
			}
			_, skills := get(t, c, f.srv.URL+"/console/skills?trend="+period)
			// A breaker's state is in the page's language.
			if strings.Contains(skills, "<td>closed</td>") || !strings.Contains(skills, "<td>正常</td>") {
				t.Errorf("%s %s: the skills page does not show the breakers' state in Chinese", who.user, period)
			}
			if n := sumColumn(t, chartRows(t, skills, "chart-skill-calls"), "hr_leave_balance"); n != 1 {
				t.Errorf("%s %s: skill chart counts %d calls, want 1", who.user, period, n)
			}
		}
	}
}

// TestTokenCosts: the tokens table gives each model's tokens and the cost
// at the configured prices, with the currency; a model without a price
// has none.
func TestTokenCosts(t *testing.T) {
	pool := openPool(t)
	ctx := context.Background()
	now := time.Now()
	var session int64
	if err := pool.QueryRow(ctx, `INSERT INTO sessions (channel, account, chat_id, user_id) VALUES ('wecom', 'app', 'c', 'u') RETURNING id`).Scan(&session); err != nil {
		t.Fatal(err)
	}
	for i, m := range []struct {
		model            string
		prompt, complete int
	}{{"qwen-plus", 1_000_000, 500_000}, {"qwen-plus", 1_000_000, 500_000}, {"local-llm", 10, 5}} {
		var in int64
		if err := pool.QueryRow(ctx, `INSERT INTO inbound_messages (channel, account, platform_msg_id, msg_type, chat_id, chat_type, sender_id, status)
VALUES ('wecom', 'app', $1, 'text', 'c', 'single', 'u', 'done') RETURNING id`, "m"+itoa(int64(i))).Scan(&in); err != nil {
			t.Fatal(err)
		}
		if err := store.InsertRun(ctx, pool, store.RunRecord{ID: "run-" + itoa(int64(i)), SessionID: session, InboundID: in, Model: m.model,
			StopReason: "finished", PromptTokens: m.prompt, CompletionTokens: m.complete, StartedAt: now, FinishedAt: now}, nil); err != nil {
			t.Fatal(err)
		}
	}
	c := console.New(console.Deps{Store: store.NewConsole(pool), Logger: discard(),
		Costs: config.CostsConfig{Currency: "USD", Models: map[string]config.ModelPrice{"qwen-plus": {Prompt: 0.8, Completion: 2}}}})
	base, cl := serveAsAdmin(t, pool, c)
	_, body := get(t, cl, base+"/console/?trend=24h")
	rows := chartRows(t, body, "chart-tokens")
	want := [][]string{
		{"日期", "模型", "运行数", "输入 tokens", "输出 tokens", "估算费用 (USD)"},
		{now.Format("2006-01-02"), "local-llm", "1", "10", "5", "–"},
		{now.Format("2006-01-02"), "qwen-plus", "2", "2000000", "1000000", "3.60"},
		{"合计", "", "", "", "", "3.60"},
	}
	if len(rows) != len(want) {
		t.Fatalf("tokens table:\n%q\nwant\n%q", rows, want)
	}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("tokens row %d: %q, want %q", i, rows[i], want[i])
		}
	}
}

// TestExportCSV: an admin exports the runs and the conversations of a day
// as CSV with phone numbers masked; a viewer is refused; a range longer
// than a month or reversed is refused.
func TestExportCSV(t *testing.T) {
	f := newFixture(t)
	waitCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := f.ch.Message("acc-1", "msg-phone-1", "lisi", "lisi", "我的手机号是 13812345678，年假还有几天？", false, false)
	if _, err := f.gw.Accept(waitCtx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ch.WaitSent(waitCtx, 2); err != nil {
		t.Fatal(err)
	}
	today := time.Now().Format(time.DateOnly)
	admin := client(t)
	f.login(t, admin, adminUser, adminPass)
	for what, minRows := range map[string]int{"runs": 2, "conversations": 4} {
		status, body := get(t, admin, f.srv.URL+"/console/export.csv?what="+what+"&from="+today+"&to="+today)
		if status != http.StatusOK {
			t.Fatalf("export %s: %d %s", what, status, body)
		}
		if strings.Contains(body, "13812345678") || !strings.Contains(body, "138****5678") {
			t.Errorf("export %s does not mask the phone number:\n%s", what, body)
		}
		recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "\ufeff"))).ReadAll()
		if err != nil {
			t.Fatalf("export %s is not CSV: %v\n%s", what, err, body)
		}
		if len(recs)-1 < minRows {
			t.Errorf("export %s: %d rows, want at least %d:\n%s", what, len(recs)-1, minRows, body)
		}
		noSecrets(t, "export "+what, body)
	}
	viewer := client(t)
	f.login(t, viewer, viewerUser, viewerPass)
	if status, _ := get(t, viewer, f.srv.URL+"/console/export.csv?what=runs&from="+today+"&to="+today); status != http.StatusForbidden {
		t.Errorf("viewer's export: %d, want 403", status)
	}
	long := time.Now().AddDate(0, 0, -31).Format(time.DateOnly)
	for _, q := range []string{"what=runs&from=" + long + "&to=" + today, "what=runs&from=" + today + "&to=" + long,
		"what=secrets&from=" + today + "&to=" + today, "what=runs"} {
		if status, _ := get(t, admin, f.srv.URL+"/console/export.csv?"+q); status != http.StatusBadRequest {
			t.Errorf("export ?%s: %d, want 400", q, status)
		}
	}
}
