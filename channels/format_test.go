package channels

import "testing"

func TestAdaptMarkdownPlainKeepsMaskedNumbers(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"Bold", "**重点**内容", "重点内容"},
		{"BoldInSentence", "这是**重点**内容", "这是重点内容"},
		{"Underscores", "__注意__：明天停电", "注意：明天停电"},
		{"TwoBolds", "**甲** 和 **乙**", "甲 和 乙"},
		{"TwoMaskedMobiles", "张三 138****5678，李四 139****1234", "张三 138****5678，李四 139****1234"},
		{"MaskedMobilesAdjacent", "138****5678和139****1234", "138****5678和139****1234"},
		{"MaskedID", "身份证 1101**********1234 与 138****5678", "身份证 1101**********1234 与 138****5678"},
		{"TwoStarMaskInDigits", "1**5 与 2**6", "1**5 与 2**6"},
		{"MaskedInsideBold", "**电话 138****5678**", "电话 138****5678"},
		{"BoldThenMasked", "**张三**：138****5678，**李四**：139****1234", "张三：138****5678，李四：139****1234"},
		{"SnakeCase", "字段 user__id 与 a__b", "字段 user__id 与 a__b"},
		{"SpaceAfterOpen", "a ** b ** c", "a ** b ** c"},
		{"Unclosed", "**没有结束", "**没有结束"},
		{"AcrossLines", "**第一行\n第二行**", "**第一行\n第二行**"},
		{"Empty", "****", "****"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := AdaptMarkdown(tc.in, DialectNone); got != tc.want {
				t.Errorf("AdaptMarkdown(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
