package agent

import (
	"slices"
	"strings"
	"testing"
)

// TestClauses: the one-pass cut is the cut at each separator in turn, and
// it stays so only while no separator overlaps another.
func TestClauses(t *testing.T) {
	for _, a := range clauseSeparators {
		for _, b := range clauseSeparators {
			if a == b {
				continue
			}
			for k := 1; k < len(a); k++ {
				if strings.HasPrefix(b, a[k:]) || strings.Contains(b, a) {
					t.Fatalf("separators %q and %q overlap: the one-pass cut would differ from cutting at each in turn", a, b)
				}
			}
		}
	}
	inTurn := func(text string) []string {
		parts := []string{text}
		for _, sep := range clauseSeparators {
			var next []string
			for _, p := range parts {
				next = append(next, strings.Split(p, sep)...)
			}
			parts = next
		}
		var out []string
		for _, p := range parts {
			if strings.TrimSpace(p) != "" {
				out = append(out, p)
			}
		}
		return out
	}
	for _, text := range []string{"", "我还有几天年假？", "查下年假，顺便帮我请周五一天", "，，", "报销和发票以及工资；然后 VPN!",
		"a,b;c\n d、", "同时", "看看我的报销记录，把重复的那笔撤了", "还有还有还有"} {
		if got, want := clauses(text), inTurn(text); !slices.Equal(got, want) {
			t.Errorf("clauses(%q) = %q, want %q", text, got, want)
		}
	}
}
