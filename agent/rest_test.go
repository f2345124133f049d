package agent

import (
	"testing"
)

// Two-step requests whose second step is a different verb on another
// object (issue #37 item 3): after the first tool round the rest of the
// request gets its skill, though the first clause's object dominates the
// whole request's words.
func TestReoffer_RestOfRequest(t *testing.T) {
	qs := []largeQuestion{
		{Kind: "two_step", Q: "看看我邮箱容量还剩多少，然后给我开个VPN", Steps: [][]string{{"it_mailbox_query"}, {"it_vpn_apply"}}},
		{Kind: "two_step", Q: "帮我查一下体检报告，再把电脑报修一下", Steps: [][]string{{"hr_checkup_query"}, {"admin_repair_apply"}}},
		{Kind: "two_step", Q: "我的饭补到账没？顺便帮我报一笔240的加班餐", Steps: [][]string{{"hr_meal_query"}, {"fin_expense_apply"}}},
		{Kind: "two_step", Q: "查一下我的餐补，然后报销一笔240的餐费", Steps: [][]string{{"hr_meal_query"}, {"fin_expense_apply"}}},
	}
	for _, n := range []int{100, 500} {
		out := measureLarge(t, n, qs)
		if out.stepHit[1] != out.stepNeeded[1] {
			t.Errorf("%d skills: step 2 offered for %d of %d requests:\n%v", n, out.stepHit[1], out.stepNeeded[1], out.misses)
		}
	}
}
