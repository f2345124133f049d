package agent

import (
	"testing"

	"github.com/hermes-gw/hermes/skills"
)

// Runs of one catalog share its matcher; another catalog, another text of
// a skill or a deployment's own colloquial words get their own, and a
// cached matcher is never handed to a catalog of other skills.
func TestMatcherSharedPerCatalog(t *testing.T) {
	leave := skills.Spec{Name: "hr_leave_balance", Description: "查询年假余额"}
	vpn := skills.Spec{Name: "it_vpn_reset", Description: "重置 VPN 密码"}
	a := matcherFor([]skills.Spec{leave, vpn}, newColloquialTable(nil))
	if b := matcherFor([]skills.Spec{leave, vpn}, newColloquialTable(nil)); b != a {
		t.Error("the same catalog got a matcher of its own")
	}
	if b := matcherFor([]skills.Spec{vpn, leave}, newColloquialTable(nil)); b == a {
		t.Error("a catalog in another order got the first one's matcher")
	}
	edited := vpn
	edited.Description = "申请 VPN 权限"
	if b := matcherFor([]skills.Spec{leave, edited}, newColloquialTable(nil)); b == a {
		t.Error("a catalog with an edited description got the old matcher")
	}
	own := newColloquialTable(map[string][]string{"翻墙": {"VPN"}})
	if b, c := matcherFor([]skills.Spec{leave, vpn}, own), matcherFor([]skills.Spec{leave, vpn}, own); b == a || c == b {
		t.Error("a deployment's colloquial words were matched with a cached matcher")
	}
	// A collision of keys: the entry names other skills, so it is rebuilt.
	other := []skills.Spec{{Name: "fin_payslip", Description: "工资条"}, vpn}
	matchers.Store(catalogKey(other), &catalogMatcher{names: []string{"hr_leave_balance", "it_vpn_reset"}, m: a})
	if b := matcherFor(other, newColloquialTable(nil)); b == a {
		t.Error("a catalog of other skills got a cached matcher under its key")
	}
}
