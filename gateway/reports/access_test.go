package reports_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/reports"
	"github.com/hermes-gw/hermes/gateway/store"
)

// weeklySkill is it_ticket_weekly limited to users.
func weeklySkill(t *testing.T, dir string, users string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "weekly"), 0o755); err != nil {
		t.Fatal(err)
	}
	def := "---\nname: it_ticket_weekly\ndescription: 上周工单统计\nread_only: true\nendpoint: /it/tickets/weekly\n" +
		"identity:\n  hmac_key_env: HERMES_DEMO_IT_KEY\naccess:\n  corps: [corp-test]\n  users: [" + users + "]\n---\n"
	if err := os.WriteFile(filepath.Join(dir, "weekly", "SKILL.md"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReportRunsUnderTheOwnersAccess: a skill the owner may not use is
// refused at creation, and at run time once the owner has lost access
// (the run is recorded as failed, nothing goes to the report's chat and
// the owner is told in their private chat).
func TestReportRunsUnderTheOwnersAccess(t *testing.T) {
	t.Parallel()
	h, ch, clock := reportRig(t)
	dir := t.TempDir()
	weeklySkill(t, dir, "zhangsan")
	gw, rs := h.StartWithReports("reports:\n  scan_interval: 1h\n", gateway.Deps{Channels: []channels.Channel{ch}, Now: clock.Now, SkillsFS: os.DirFS(dir)})
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)

	lisi := gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpRunOnce, group("it-group"))
	lisi.Owner.User = "lisi"
	if _, err := rs.CreateReport(ctx, lisi); !errors.Is(err, reports.ErrBadReport) || !strings.Contains(err.Error(), "may not use") {
		t.Fatalf("lisi's report: %v, want refused", err)
	}
	rep, err := rs.CreateReport(ctx, gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpRunOnce, group("it-group")))
	if err != nil {
		t.Fatal(err)
	}
	weeklySkill(t, dir, "lisi") // zhangsan loses access
	if err := gw.ReloadSkills(); err != nil {
		t.Fatal(err)
	}
	runID, err := rs.RunReportNow(ctx, rep.ID, &zhangsan)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	run, err := store.GetReportRun(ctx, h.Pool, runID)
	if err != nil || run.Status != store.RunFailed || !strings.Contains(run.Error, "not available to this user") {
		t.Errorf("run %+v %v, want failed for access", run, err)
	}
	sent := ch.Sent()
	if len(sent) != 1 || chantest.AddressOf(sent[0]).UserID != "zhangsan" || !strings.Contains(sent[0].Text, "上周工单统计") ||
		!strings.Contains(sent[0].Text, "这次没有发送") {
		t.Errorf("sent %+v for a refused report, want only the note to its owner", sent)
	}
	for _, c := range h.Backend.Calls() {
		if c.Path == "/it/tickets/weekly" {
			t.Errorf("the backend was called as %s", c.Identity.UserID)
		}
	}
}

// TestPromptReport: a report whose content is the agent's answer to a
// prompt, run as the owner.
func TestPromptReport(t *testing.T) {
	t.Parallel()
	h, ch, clock := reportRig(t)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		return openaitest.Reply{Content: "本周 IT 要点：网络故障最多，共 12 张。"}
	})
	_, rs := startReports(h, ch, clock)
	ctx := gatewaytest.WithTimeout(t, 60*time.Second)
	nr := gatewaytest.WeeklyTickets(zhangsan, reports.CatchUpRunOnce, group("it-group"))
	nr.Spec = reports.Spec{Prompt: "总结上周的 IT 工单"}
	rep, err := rs.CreateReport(ctx, nr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.RunReportNow(ctx, rep.ID, &zhangsan); err != nil {
		t.Fatal(err)
	}
	sent, err := ch.WaitSent(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sent[0].Text, "网络故障最多") {
		t.Errorf("sent %q", sent[0].Text)
	}
	reqs := h.Model.Requests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.Messages[len(last.Messages)-1].Content, "总结上周的 IT 工单") {
		t.Errorf("the model was not given the prompt: %+v", last.Messages)
	}
}
