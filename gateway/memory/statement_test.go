package memory

import "testing"

// A statement is told by what the message is, not by the words it starts
// with: the forms a list of cues missed are statements, questions
// without a question mark and requests are not.
func TestStatesSomething(t *testing.T) {
	for text, want := range map[string]bool{
		"我上周申请的 VPN 是 VPN-1001":            true,
		"我常驻上海办公室":                         true,
		"我在上海办公室":                          true,
		"本人负责华东区销售":                        true,
		"以后回复我请用英文":                        true,
		"下次直接给结论，不用解释":                     true,
		"I'm based in the Shenzhen office": true,
		"我常驻上海，帮我查下这层的打印机":                 true,
		"我还有几天年假":                          false,
		"我还有几天年假？":                         false,
		"帮我查下工资":                           false,
		"给我发一下上个月的工资条":                     false,
		"今天天气不错":                           false,
		"上海办公室的打印机在哪？":                     false,
		"我是不是还有年假":                         false,
		"好的":                               false,
	} {
		if got := statesSomething(text); got != want {
			t.Errorf("statesSomething(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestKindOf(t *testing.T) {
	for text, want := range map[string]Kind{
		"以后回复我请用英文":            KindPreference,
		"叫我小王":                 KindPreference,
		"回答尽量简短":               KindPreference,
		"常驻上海办公室":              KindFact,
		"负责华东区的销售":             KindFact,
		"上周申请的 VPN 是 VPN-1001": KindFact,
	} {
		if got := kindOf(text); got != want {
			t.Errorf("kindOf(%q) = %s, want %s", text, got, want)
		}
	}
}

// A confirmed write's memory keeps the identifiers the backend returned,
// before the reply (which a long one may be cut from), and none twice.
func TestOutcomeKeepsTheBackendsIdentifiers(t *testing.T) {
	got := outcomeText("2026-12-05", "已为你提交报修。", `{"ticket_id":"INC-20261","status":"open","assignee":"ZHANGSAN","related":"REQ-7781","dup":"INC-20261"}`)
	if got != "2026-12-05（编号 INC-20261、REQ-7781）已为你提交报修。" {
		t.Errorf("outcomeText = %q", got)
	}
	if got := outcomeText("2026-12-05", "已提交，单号 VPN-1001。", `{"id":"VPN-1001"}`); got != "2026-12-05 已提交，单号 VPN-1001。" {
		t.Errorf("an id the reply already says: %q", got)
	}
}
