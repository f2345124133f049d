package knowledge

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestWindowKeepsTheSentenceThatMatches: a long passage is cut to the
// sentences around the one holding the question's words, within the
// budget, with ellipses where text was left out.
func TestWindowKeepsTheSentenceThatMatches(t *testing.T) {
	filler := strings.Repeat("本条适用于全体正式员工及试用期员工。", 6)
	text := filler + "员工依法登记结婚的，可享受婚假 3 天。" + filler
	terms := []weighted{{"婚假", 5}, {"结婚", 3}}
	got := window(text, "", terms, false, 60)
	if !strings.Contains(got, "婚假 3 天") {
		t.Fatalf("window %q lacks the matching sentence", got)
	}
	if n := utf8.RuneCountInString(got); n > 60+2*utf8.RuneCountInString(ellipsis) {
		t.Fatalf("window of %d characters, budget 60: %q", n, got)
	}
	if !strings.HasPrefix(got, ellipsis) || !strings.HasSuffix(got, ellipsis) {
		t.Fatalf("window %q does not mark the text left out", got)
	}
	if short := "婚假 3 天。"; window(short, "", terms, false, 60) != short {
		t.Fatalf("a passage within the budget was cut")
	}
}

// TestWindowsShareTheSearchBudget: the passages of one search together
// stay within searchRunes; one the budget leaves no room for is dropped,
// and a window starting in a later section is cited by its heading.
func TestWindowsShareTheSearchBudget(t *testing.T) {
	long := strings.Repeat("出差期间住宿按城市等级报销。", 40)
	ps := []Passage{{Text: long}, {Text: long}, {Text: long}, {Text: long}}
	got := windows(ps, []weighted{{"住宿", 1}}, false)
	total := 0
	for _, p := range got {
		total += runes(p.Text)
	}
	if total > searchRunes+4*2 || len(got) == 4 {
		t.Fatalf("%d passages of %d characters together, budget %d", len(got), total, searchRunes)
	}
	merged := strings.Repeat("住宿标准见下表", 60) + "。\n[伙食补助] 伙食补助每天 100 元。"
	got = windows([]Passage{{Heading: "差旅 > 住宿", Text: merged}}, []weighted{{"伙食", 3}, {"补助", 3}}, false)
	if got[0].Heading != "伙食补助" || !strings.Contains(got[0].Text, "100 元") {
		t.Fatalf("window %q cited as %q, want the section it shows", got[0].Text, got[0].Heading)
	}
}

// FuzzWindow: any passage text and question give a window of valid text
// within its budget.
func FuzzWindow(f *testing.F) {
	f.Add("员工依法登记结婚的，可享受婚假 3 天。\n[年假] 年休假 5 天。", "婚假几天", 40)
	f.Add("VPN. Connect first! Then sign in?\n\n", "vpn 连不上", 10)
	f.Fuzz(func(t *testing.T, text, query string, budget int) {
		budget = minWindowRunes + abs(budget)%windowRunes
		var terms []weighted
		for _, w := range strings.Fields(query) {
			terms = append(terms, weighted{strings.ToLower(w), 1})
		}
		got := window(text, "", terms, false, budget)
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatalf("window of valid text is not: %q", got)
		}
		if n := utf8.RuneCountInString(got); n > max(runes(text), budget+2*utf8.RuneCountInString(ellipsis)) {
			t.Fatalf("window of %d characters, budget %d", n, budget)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
