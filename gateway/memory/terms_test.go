package memory

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"上海办公室", []string{"上海", "公室", "办公", "海办"}},
		{"我在上海办公室", []string{"上海", "公室", "办公", "在上", "海办"}},
		// 我 makes no bigram: 叫我 and 我小 would match every first-person note.
		{"叫我小王", []string{"小王"}},
		{"2026-12-01 提交了 VPN 申请 VPN-1001", []string{"01", "1001", "12", "2026", "vpn", "提交", "申请"}},
		{"我的 VPN 申请", []string{"vpn", "申请"}},
		// Full width is NFKC-folded to ASCII, then lowered.
		{"ＶＰＮ－１００１", []string{"1001", "vpn"}},
		// Letters and digits together stay one word; one character alone is no word.
		{"ww123 a 1 Wifi6", []string{"wifi6", "ww123"}},
		// A single Han character is kept, unless it is a stop character.
		{"住 京 的 是", []string{"京", "住"}},
		// Script changes split runs: VPN申请 is vpn + 申请.
		{"开VPN申请", []string{"vpn", "开", "申请"}},
		// A stop bigram goes alone: its neighbours may be words (统一个人: 统一 and 个人).
		{"这个一下什么", []string{"下什", "个一"}},
		{"统一个人信息", []string{"个人", "人信", "信息", "统一"}},
		{"帮我查一下年假", []string{"下年", "年假", "查一"}},
		{"", nil},
		{"  ，。！？ ", nil},
	} {
		if got := Terms(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Terms(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestTermsDeduplicatesAndSorts(t *testing.T) {
	t.Parallel()
	got := Terms("上海上海 vpn VPN Vpn 上海")
	if want := []string{"vpn", "上海", "海上"}; !slices.Equal(got, want) {
		t.Errorf("Terms = %q, want %q sorted", got, want)
	}
}

func TestTermsBounded(t *testing.T) {
	t.Parallel()
	// 200 distinct Han characters make 199 bigrams: the first 64 are kept.
	var b strings.Builder
	for r := rune(0x4E00); r < 0x4E00+200; r++ {
		b.WriteRune(r)
	}
	got := Terms(b.String())
	if len(got) != MaxTerms {
		t.Fatalf("%d terms, want %d", len(got), MaxTerms)
	}
	if !slices.Contains(got, string([]rune{0x4E00, 0x4E01})) || slices.Contains(got, string([]rune{0x4E00 + 100, 0x4E00 + 101})) {
		t.Errorf("kept terms are not the text's first ones: %q", got)
	}
	// A long word is cut; a long text is read only so far.
	if got := Terms(strings.Repeat("a", 1000)); len(got) != 1 || len(got[0]) != maxWordBytes {
		t.Errorf("long word: %q", got)
	}
	if got := Terms(strings.Repeat(" ", maxTermsInput) + "vpn"); got != nil {
		t.Errorf("terms past the read bound: %q", got)
	}
}

func FuzzTerms(f *testing.F) {
	for _, s := range []string{"上海办公室", "2026-12-01 提交了 VPN 申请 VPN-1001", "叫我小王", "ＶＰＮ", "\xff\xfe上海", "ﷺ", "a1b2-c3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := Terms(text)
		if len(got) > MaxTerms {
			t.Fatalf("%d terms", len(got))
		}
		if !slices.IsSorted(got) {
			t.Fatalf("not sorted: %q", got)
		}
		for i, term := range got {
			if term == "" || !utf8.ValidString(term) {
				t.Fatalf("bad term %q", term)
			}
			if i > 0 && got[i-1] == term {
				t.Fatalf("duplicate %q", term)
			}
		}
	})
}
