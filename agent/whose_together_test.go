package agent

import "testing"

// The person joined to the asker is read from the request's structure,
// not a word list: the head of the noun phrase joined by 和/跟/与, up to
// what is asked of the two.
func TestCompanion(t *testing.T) {
	t.Parallel()
	m := matcherFor(largeCatalogSpecs(100), newColloquialTable(nil))
	for q, want := range map[string]string{
		"我和对门工位的大刘谁的餐补多":  "大刘",
		"我跟隔壁组的胖哥这个月加班谁多": "胖哥",
		"我和财务部新来的Amy的报销":  "Amy",
		"帮我查查对门的大刘和我的考勤":  "大刘",
		"我的餐补和二狗子的比一比":    "二狗子",
		"我跟我们组长今年的绩效":     "组长",
		"我跟师兄的餐补谁领得多":     "师兄",
		"我们俩的考勤":          "",
		"我这个月的考勤":         "",
	} {
		if got := companion(q, m); got != want {
			t.Errorf("companion(%q) = %q, want %q", q, got, want)
		}
	}
}

// What of a relabeled answer is about the asker alone: the clauses that
// name neither the other person (in a shorter form too) nor the two.
func TestOwnPart(t *testing.T) {
	t.Parallel()
	cases := [][3]string{ // answer, who, want
		{"大刘这个月的记录：迟到 0 次，缺卡 1 次。", "大刘", "迟到 0 次，缺卡 1 次。"},
		{"你迟到 0 次，大刘迟到 2 次。", "大刘", "你迟到 0 次。"},
		{"你比大刘多 100 元。", "大刘", ""},
		{"他的餐补 300 元；你的 200 元。", "大刘", "你的 200 元。"},
		{"前台妹子迟到 1 次；你迟到 0 次。", "楼下前台妹子", "你迟到 0 次。"},
	}
	for _, c := range cases {
		if got := ownPart(c[0], c[1]); got != c[2] {
			t.Errorf("ownPart(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}
