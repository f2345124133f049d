package channels

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitText(t *testing.T) {
	t.Run("ShortTextIsOnePart", func(t *testing.T) {
		if got := SplitText("  你好  ", 2048); len(got) != 1 || got[0] != "你好" {
			t.Fatalf("got %q", got)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		if got := SplitText(" \n ", 2048); got != nil {
			t.Fatalf("got %q, want nil", got)
		}
	})
	t.Run("PrefersParagraphs", func(t *testing.T) {
		a, b := strings.Repeat("甲", 200), strings.Repeat("乙", 200) // 600 bytes each
		got := SplitText(a+"\n\n"+b, 1000)
		if len(got) != 2 || got[0] != a || got[1] != b {
			t.Fatalf("got %d parts", len(got))
		}
	})
	t.Run("PrefersSentences", func(t *testing.T) {
		s := strings.Repeat("这是一句话。", 100) // 1800 bytes
		for _, p := range SplitText(s, 500) {
			if !strings.HasSuffix(p, "。") || len(p) > 500 {
				t.Fatalf("part %q (%d bytes)", p, len(p))
			}
		}
	})
	t.Run("NeverCutsARune", func(t *testing.T) {
		s := strings.Repeat("字", 1000) // no boundary at all
		var joined strings.Builder
		for _, p := range SplitText(s, 100) {
			if !utf8.ValidString(p) || len(p) > 100 {
				t.Fatalf("bad part %q", p)
			}
			joined.WriteString(p)
		}
		if joined.String() != s {
			t.Fatal("parts lost text")
		}
	})
}

func FuzzSplitText(f *testing.F) {
	f.Add("这是一句话。Another sentence. 第三段\n\n新段落", 7)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if !utf8.ValidString(s) || max < 4 || max > 4096 {
			return
		}
		var joined strings.Builder
		for _, p := range SplitText(s, max) {
			if len(p) > max || !utf8.ValidString(p) || p == "" {
				t.Fatalf("bad part %q for max %d", p, max)
			}
			joined.WriteString(p)
		}
		if strings.Join(strings.Fields(joined.String()), "") != strings.Join(strings.Fields(s), "") {
			t.Fatalf("parts do not add up to the text")
		}
	})
}
