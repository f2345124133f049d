package knowledge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestPassageLeadingInIsGivenWithWhatFollows: a passage announcing what
// follows (「按以下顺序办理。」) is given with the next passage, whose words
// the question does not share; a passage announcing nothing is not.
func TestPassageLeadingInIsGivenWithWhatFollows(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	doc := "# 新员工入职指南\n\n欢迎加入！请在入职第一天按以下顺序办理。\n\n## 报到\n\n1. 上午 9:30 到前台报到，携带身份证原件和银行卡。\n2. 领取工牌。\n\n" +
		"## 试用期\n\n试用期为 3 个月。\n\n## 导师\n\n每位新员工有一名导师。\n"
	add(t, pool, knowledge.NewDocument{Title: "新员工入职指南", Data: []byte(doc), Audience: knowledge.Audience{Corps: []string{corp}}})
	find := func(q string) string {
		t.Helper()
		ps, err := knowledge.Search(context.Background(), pool, zhang, q, 5, knowledge.Lexical{}, knowledge.Similar{})
		if err != nil {
			t.Fatal(err)
		}
		return joined(ps)
	}
	if got := find("入职第一天要带什么"); !strings.Contains(got, "身份证原件") {
		t.Fatalf("入职第一天要带什么 found %q, want the steps that follow", got)
	}
	if got := find("试用期几个月"); strings.Contains(got, "导师") {
		t.Fatalf("试用期几个月 found %q: the next passage joined a passage that leads into nothing", got)
	}
}
