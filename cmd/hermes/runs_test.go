package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/store"
)

// TestRunsShowMasksPersonalNumbers: a trace stored with a confirmation
// prompt or arguments holding a mobile or ID number prints them masked,
// as a reply shows them.
func TestRunsShowMasksPersonalNumbers(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	run := store.RunRecord{ID: "run-1", Model: "m", StopReason: "awaiting_confirmation", StartedAt: at, FinishedAt: at,
		Reply: "请回复「确认」以执行：给 13812345678 开通 VPN"}
	steps := []store.StepRecord{{Step: 1, Kind: "tool", Tool: "it_vpn_open", Args: `{"phone":"13812345678"}`,
		Observation: "Not executed: this action needs the user's confirmation first (给 13812345678 开通 VPN).",
		Detail:      []byte(`{"Cause":"tool it_vpn_open: 给 110101199003071234 开通 VPN"}`)}}
	var out bytes.Buffer
	printRun(&out, run, steps)
	for _, raw := range []string{"13812345678", "110101199003071234"} {
		if strings.Contains(out.String(), raw) {
			t.Errorf("runs show prints %s unmasked:\n%s", raw, out.String())
		}
	}
	if !strings.Contains(out.String(), "138****5678") || !strings.Contains(out.String(), "reply: 请回复「确认」以执行：给 138****5678 开通 VPN") {
		t.Errorf("runs show lost the masked number:\n%s", out.String())
	}
}
