package knowledge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// TestPostingsFollowOtherReplicas: a replica's in-memory term index
// sees the documents another replica added, superseded or deleted at its
// next search, and an audience still hides what the caller may not see.
func TestPostingsFollowOtherReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	mine := knowledge.Lexical{Postings: knowledge.NewPostings()}
	find := func(c knowledge.Caller, q string) string {
		t.Helper()
		ps, err := knowledge.Search(ctx, pool, c, q, 5, mine, knowledge.Similar{})
		if err != nil {
			t.Fatal(err)
		}
		return joined(ps)
	}
	add(t, pool, knowledge.NewDocument{Title: "休假制度", Data: []byte(leave), Audience: knowledge.Audience{Corps: []string{corp}}})
	if got := find(zhang, "婚假几天"); !strings.Contains(got, "婚假 3 天") {
		t.Fatalf("婚假几天 found %q", got)
	}
	// Another replica (this one's index is not told) adds a document.
	const shuttle = "# 班车\n\n## 晚班\n\n最晚一班班车 21:15 从园区发车。\n"
	_, err := knowledge.Add(ctx, pool, knowledge.NewDocument{Name: "班车.md", Title: "班车", Data: []byte(shuttle),
		Audience: knowledge.Audience{Corps: []string{corp}}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := find(zhang, "最晚一班班车"); !strings.Contains(got, "21:15") {
		t.Fatalf("a document another replica added is not found: %q", got)
	}
	// …supersedes it with a version for HR only…
	_, err = knowledge.Add(ctx, pool, knowledge.NewDocument{Name: "班车.md", Title: "班车", Version: "2",
		Effective: t0, Data: []byte(strings.ReplaceAll(shuttle, "21:15", "22:30")),
		Audience: knowledge.Audience{Corps: []string{corp}, Departments: []string{"9"}}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if got := find(zhang, "最晚一班班车"); strings.Contains(got, "21:15") || strings.Contains(got, "22:30") {
		t.Fatalf("zhangsan got a superseded version or one for HR only: %q", got)
	}
	if got := find(hrStaff, "最晚一班班车"); !strings.Contains(got, "22:30") {
		t.Fatalf("HR does not find the version in force: %q", got)
	}
	// …and deletes both.
	docs, err := knowledge.List(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if d.Title == "班车" {
			if _, err := knowledge.Delete(ctx, pool, d.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := find(hrStaff, "最晚一班班车"); strings.Contains(got, "班车") {
		t.Fatalf("a deleted document is still found: %q", got)
	}
}

const meals = "# 差旅费报销标准\n\n## 伙食补助\n\n出差期间伙食补助每人每天 100 元，按出差天数发放。\n\n## 住宿\n\n一线城市每晚不超过 550 元。\n"

// TestVocabularyBridgesColloquialWords: 「餐补」 finds 伙食补助 through the
// built-in vocabulary, which a search without it does not, and a
// deployment's knowledge.vocabulary adds its own words.
func TestVocabularyBridgesColloquialWords(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	add(t, pool, knowledge.NewDocument{Title: "差旅费报销标准", Data: []byte(meals), Audience: knowledge.Audience{Corps: []string{corp}}})
	find := func(v *knowledge.Vocabulary, q string) string {
		t.Helper()
		ps, err := knowledge.Search(context.Background(), pool, zhang, q, 5, knowledge.Lexical{Vocabulary: v}, knowledge.Similar{})
		if err != nil {
			t.Fatal(err)
		}
		return joined(ps)
	}
	if got := find(nil, "餐补一天多少"); strings.Contains(got, "100 元") {
		t.Fatalf("without a vocabulary 餐补 found 伙食补助: %q (the test proves nothing)", got)
	}
	if got := find(knowledge.NewVocabulary(nil), "餐补一天多少"); !strings.Contains(got, "100 元") {
		t.Fatalf("餐补一天多少 found %q, want the 伙食补助 passage", got)
	}
	if got := find(knowledge.NewVocabulary(nil), "吃喝钱一天多少"); strings.Contains(got, "100 元") {
		t.Fatalf("吃喝钱 is not in the built-in vocabulary, yet found %q", got)
	}
	v := knowledge.NewVocabulary(map[string][]string{"吃喝钱": {"伙食补助"}})
	if got := find(v, "吃喝钱一天多少"); !strings.Contains(got, "100 元") {
		t.Fatalf("a deployment's word 吃喝钱 found %q, want the 伙食补助 passage", got)
	}
}
