package reports_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/store"
)

// deptWeeklySkill is it_ticket_weekly limited to WeCom department 7.
func deptWeeklySkill(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "weekly"), 0o755)
	def := "---\nname: it_ticket_weekly\ndescription: 上周工单统计\nread_only: true\nendpoint: /it/tickets/weekly\n" +
		"identity:\n  hmac_key_env: HERMES_DEMO_IT_KEY\naccess:\n  corps: [" + gatewaytest.CorpID + "]\n  departments: [\"7\"]\n---\n"
	if err := os.WriteFile(filepath.Join(dir, "weekly", "SKILL.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReportRunsWithTheOwnersDepartmentsNow: a report whose skill is
// limited to a department runs with the departments its owner has at
// run time, looked up in the WeCom address book: moved out after the
// report was made, the owner's run is refused (recorded, the owner told,
// the backend never called); moved back, the next run goes out.
func TestReportRunsWithTheOwnersDepartmentsNow(t *testing.T) {
	t.Parallel()
	h, clock := gatewaytest.NewClocked(t)
	h.WeComAPI.SetDepartments("zhangsan", 7)
	_, rs := h.StartWithReports("reports:\n  scan_interval: 1h\n", gateway.Deps{Now: clock.Now, SkillsFS: os.DirFS(deptWeeklySkill(t))})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)

	nr := wecomReport("0 9 * * 1", channels.ChatSingle, "zhangsan")
	nr.Spec.Chart = nil
	nr.Owner.Depts = []string{"7"} // what the chat path knew when the report was made
	rep, err := rs.CreateReport(ctx, nr)
	if err != nil {
		t.Fatal(err)
	}
	h.WeComAPI.SetDepartments("zhangsan", 3) // moved to another department

	clock.Set(gatewaytest.Monday9) // an hour on: the address book is asked again
	scheduleTick(t, h, ctx, rs, rep.ID, gatewaytest.Monday9)
	h.WaitIdle(ctx)
	var status, why string
	if err := h.Pool.QueryRow(ctx, `SELECT status, error FROM report_runs WHERE report_id = $1`, rep.ID).Scan(&status, &why); err != nil {
		t.Fatal(err)
	}
	if status != store.RunFailed || !strings.Contains(why, "not available to this user") {
		t.Errorf("run %s (%s), want failed for access", status, why)
	}
	msgs := h.WeComAPI.Messages()
	if len(msgs) != 1 || msgs[0].ToUser != "zhangsan" || !strings.Contains(msgs[0].Content, "「上周工单统计」这次没有发送") {
		t.Fatalf("WeCom got %+v, want only the note to the owner", msgs)
	}
	for _, c := range h.Backend.Calls() {
		if c.Path == "/it/tickets/weekly" {
			t.Fatalf("the backend was called as %s of department 3", c.Identity.UserID)
		}
	}

	h.WeComAPI.SetDepartments("zhangsan", 7) // back
	clock.Set(gatewaytest.Monday9.AddDate(0, 0, 7))
	scheduleTick(t, h, ctx, rs, rep.ID, gatewaytest.Monday9.AddDate(0, 0, 7))
	if _, err := h.WeComAPI.WaitMessages(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := h.WeComAPI.Messages()[1]; !strings.Contains(got.Content, "上周共新建工单 37 张") {
		t.Errorf("the report after moving back: %+v", got)
	}
}
