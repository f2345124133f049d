package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"time"

	"github.com/hermes-gw/hermes/gateway/knowledge"
)

// demoHandbook is the small company handbook `hermes demo` loads into
// the knowledge base: what an operator adds with `hermes knowledge add`.
//
//go:embed demohandbook/*.md
var demoHandbook embed.FS

// demoHandbookDocs are its documents with what an operator says of them.
var demoHandbookDocs = []knowledge.NewDocument{
	{Name: "travel.md", Title: "差旅报销标准", Version: "2026版", Effective: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Owner: "财务部"},
	{Name: "leave.md", Title: "休假制度", Owner: "人力资源部"},
}

// demoKnowledgeQuestion is the rule question 张三 asks: no skill answers
// it, the handbook does.
const demoKnowledgeQuestion = "出差住酒店一晚能报多少？"

// demoKnowledge loads the handbook and asks a rule question: the answer
// comes from its passage, and Hermes names the source.
func demoKnowledge(ctx context.Context, sess *consoleSession, stdout io.Writer) error {
	fmt.Fprintln(stdout, "\n== Knowledge: answers from the company's own documents, with the source named ==")
	if sess.knowledge == nil {
		return fmt.Errorf("demo: the knowledge feature is not attached")
	}
	for _, n := range demoHandbookDocs {
		data, err := demoHandbook.ReadFile("demohandbook/" + n.Name)
		if err != nil {
			return err
		}
		n.Data, n.Source, n.AddedBy = data, "demo handbook", "demo"
		a, err := sess.knowledge.Base().Add(ctx, n)
		if err != nil {
			return fmt.Errorf("demo handbook: %w", err)
		}
		if a.Unchanged { // a demo database kept from an earlier run
			fmt.Fprintf(stdout, "   [knowledge] 《%s》%s: already there, unchanged\n", n.Title, n.Version)
			continue
		}
		fmt.Fprintf(stdout, "   [knowledge] 《%s》%s: %d passages (as `hermes knowledge add %s` would)\n", n.Title, n.Version, a.Chunks, n.Name)
	}
	fmt.Fprintf(stdout, "你> %s\n", demoKnowledgeQuestion)
	_, err := sess.ask(ctx, demoKnowledgeQuestion)
	return err
}
