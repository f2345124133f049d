package agent

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

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

// Runs of a new catalog starting together share one build of its matcher,
// the one the cache holds.
func TestMatcherBuiltOncePerCatalogUnderABurst(t *testing.T) {
	// A catalog no other run of the test binary (-count) has seen.
	fresh := strconv.FormatInt(time.Now().UnixNano(), 36)
	specs := []skills.Spec{{Name: "hr_burst_balance", Description: "查询调休余额 " + fresh}, {Name: "it_burst_reset", Description: "重置邮箱密码"}}
	for i := range 40 {
		specs = append(specs, skills.Spec{Name: fmt.Sprintf("it_burst_%d", i), Description: fmt.Sprintf("第 %d 个系统的权限申请", i)})
	}
	const runs = 64
	got := make([]*matcher, runs)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			<-start
			got[i] = matcherFor(specs, newColloquialTable(nil))
		})
	}
	close(start)
	wg.Wait()
	for i, m := range got {
		if m != got[0] {
			t.Fatalf("run %d got a matcher of its own", i)
		}
	}
	if v, ok := matchers.Load(catalogKey(specs)); !ok || v.(*catalogMatcher).m != got[0] {
		t.Error("the cache does not hold the matcher the runs got")
	}
}
