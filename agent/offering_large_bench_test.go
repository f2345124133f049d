package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// The offering benchmark over the large generated catalogs (100 and 500
// skills, catalog_large_test.go) and a question set of single requests,
// two-step requests (a look-up, then an action), elliptical follow-ups,
// chit-chat and questions about other people
// (testdata/catalog_large/questions.json). Each question is a real agent
// turn against a model that makes the mistakes the issue names: it calls
// the skill each step needs when it is offered in full (else by name
// anyway), calls the first skill on offer for chit-chat, and words the
// caller's own record as the named colleague's. Reported per catalog:
//
//   - recall-step1%, recall-step2%: requests whose needed skill was in the
//     tools block at that step (full definitions only: a skill reachable
//     only through load_skills is not counted);
//   - chitchat-offered, chitchat-ran: chit-chat questions offered any tool
//     (load_skills included) in the first request, and those where a skill
//     ran;
//   - ratio-median, ratio-p90: first-request tokens over the naive
//     all-tools request; index-tokens, index-p90: the cost of the skill
//     index block in the first request, median and 90th percentile;
//   - relabeled: replies to a question about another person that present
//     the caller's record as that person's.

const largeQuestionsFile = "testdata/catalog_large/questions.json"

type largeQuestion struct {
	Kind    string     `json:"kind"` // single, two_step, followup, chitchat, other
	Q       string     `json:"q"`
	History []string   `json:"history"`
	Steps   [][]string `json:"steps"`   // skills needed at each model step
	Subject string     `json:"subject"` // the person a question of kind "other" names
}

func loadLargeQuestions(tb testing.TB) []largeQuestion {
	tb.Helper()
	b, err := os.ReadFile(largeQuestionsFile)
	if err != nil {
		tb.Fatal(err)
	}
	var qs []largeQuestion
	if err := json.Unmarshal(b, &qs); err != nil {
		tb.Fatal(err)
	}
	return qs
}

// stepModel plays one question: the step's skill, then an answer.
type stepModel struct {
	q    largeQuestion
	reqs []openai.ChatCompletionRequest
}

func (m *stepModel) Chat(_ context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	k := len(m.reqs)
	m.reqs = append(m.reqs, req)
	reply := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "好的，查好了。"}
	name := ""
	switch {
	case k < len(m.q.Steps):
		name = m.q.Steps[k][0]
	case m.q.Kind == "chitchat" && k == 0:
		for _, t := range req.Tools { // the tempted model takes any skill on offer
			if !isBuiltin(t.Function.Name) {
				name = t.Function.Name
				break
			}
		}
	case m.q.Kind == "other":
		reply.Content = m.q.Subject + "这个月的记录：迟到 0 次，缺卡 1 次。"
	}
	if name != "" {
		args := "{}"
		for _, t := range req.Tools {
			if t.Function.Name == name {
				args = filledArgs(t.Function.Parameters)
			}
		}
		if args == "{}" { // not offered in full: the generated schema is known
			for _, s := range largeCatalogSpecs(len(coreObjects)) {
				if s.Name == name {
					args = filledArgs(s.Parameters)
				}
			}
		}
		reply.Content = ""
		reply.ToolCalls = []openai.ToolCall{{ID: fmt.Sprintf("call_%d", k+1), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: name, Arguments: args}}}
	}
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: reply}}}, nil
}

// filledArgs is a valid value for every required property of a schema.
func filledArgs(params any) string {
	var raw []byte
	switch p := params.(type) {
	case json.RawMessage:
		raw = p
	default:
		raw, _ = json.Marshal(p)
	}
	var s struct {
		Properties map[string]struct {
			Type    string   `json:"type"`
			Format  string   `json:"format"`
			Minimum *float64 `json:"minimum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(raw, &s)
	args := map[string]any{}
	for _, name := range s.Required {
		p := s.Properties[name]
		switch {
		case p.Type == "integer" || p.Type == "number":
			args[name] = 5
			if p.Minimum != nil && *p.Minimum > 5 {
				args[name] = *p.Minimum
			}
		case p.Format == "date":
			args[name] = "2026-12-05"
		case strings.HasSuffix(name, "_id"):
			args[name] = "R-1017"
		default:
			args[name] = "测试"
		}
	}
	b, _ := json.Marshal(args)
	return string(b)
}

// largeOutcome is the benchmark's result over one catalog.
type largeOutcome struct {
	stepNeeded, stepHit [2]int
	misses              []string
	chitchat            int
	chitOffered         int
	chitRan             int
	ratios, index       []float64
	other, relabeled    int
}

func sortedAt(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// indexBlockTokens is the cost of the skill index in a system prompt.
func indexBlockTokens(system string) int {
	i := strings.Index(system, "<SKILL_INDEX>")
	j := strings.Index(system, "</SKILL_INDEX>")
	if i < 0 || j < i {
		return 0
	}
	return countTokens(system[i : j+len("</SKILL_INDEX>")])
}

func measureLarge(tb testing.TB, n int, qs []largeQuestion) largeOutcome {
	tb.Helper()
	var calls int
	tools := largeCatalog(n, &calls)
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	var out largeOutcome
	for _, q := range qs {
		calls = 0
		m := &stepModel{q: q}
		turn := Turn{SessionID: "bench", RunID: "bench", SystemPrompt: benchSystemPrompt,
			History: historyTurns(q.History), UserText: q.Q, Tools: tools}
		res, err := Run(context.Background(), m, turn, opts)
		if err != nil || len(m.reqs) == 0 {
			tb.Fatalf("%s: %v", q.Q, err)
		}
		for k, want := range q.Steps[:min(len(q.Steps), 2)] {
			out.stepNeeded[k]++
			var names []string
			if k < len(m.reqs) {
				for _, t := range m.reqs[k].Tools {
					names = append(names, t.Function.Name)
				}
			}
			if !slices.ContainsFunc(want, func(w string) bool { return !slices.Contains(names, w) }) {
				out.stepHit[k]++
			} else {
				out.misses = append(out.misses, fmt.Sprintf("step %d of %q: want %v, offered %v", k+1, q.Q, want, names))
			}
		}
		first := m.reqs[0]
		if q.Kind == "chitchat" {
			out.chitchat++
			if len(first.Tools) > 0 && slices.ContainsFunc(first.Tools, func(t openai.Tool) bool { return t.Function.Name != toolFinish }) {
				out.chitOffered++
			}
			if calls > 0 {
				out.chitRan++
			}
		}
		if q.Kind == "other" {
			out.other++
			if relabels(res.Reply, q.Subject) {
				out.relabeled++
			}
		}
		ours := requestTokens(first.Messages, first.Tools)
		out.ratios = append(out.ratios, float64(ours)/float64(plainTokens(tools, benchQuestion{Q: q.Q, History: q.History})))
		out.index = append(out.index, float64(indexBlockTokens(first.Messages[0].Content)))
	}
	return out
}

// relabels reports whether a reply about subject presents the caller's
// data as the subject's: it names the subject without saying the data
// is the caller's own.
func relabels(reply, subject string) bool {
	return strings.Contains(reply, subject) && !strings.Contains(reply, "本人")
}

// BenchmarkOffering_Large runs the question set over the generated
// catalogs of 100 and 500 skills.
func BenchmarkOffering_Large(b *testing.B) {
	qs := loadLargeQuestions(b)
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var out largeOutcome
			for b.Loop() {
				out = measureLarge(b, n, qs)
			}
			for k := range out.stepNeeded {
				b.ReportMetric(100*float64(out.stepHit[k])/float64(max(1, out.stepNeeded[k])), fmt.Sprintf("recall-step%d%%", k+1))
			}
			b.ReportMetric(float64(out.chitOffered), "chitchat-offered")
			b.ReportMetric(float64(out.chitRan), "chitchat-ran")
			b.ReportMetric(sortedAt(out.ratios, 0.5), "ratio-median")
			b.ReportMetric(sortedAt(out.ratios, 0.9), "ratio-p90")
			b.ReportMetric(sortedAt(out.index, 0.5), "index-tokens")
			b.ReportMetric(sortedAt(out.index, 0.9), "index-p90")
			b.ReportMetric(float64(out.relabeled), "relabeled")
			b.Logf("%d questions, %d chit-chat, %d about others; step 1 %d/%d, step 2 %d/%d",
				len(qs), out.chitchat, out.other, out.stepHit[0], out.stepNeeded[0], out.stepHit[1], out.stepNeeded[1])
			for _, m := range out.misses {
				b.Logf("not offered: %s", m)
			}
		})
	}
}

// TestOffering_LargeGoals holds the goals of issue #22 on the generated
// catalogs: the skill of every step on offer for at least 99% of the
// requests, no tool offered or run for chit-chat, the first request at
// most 0.15 (100 skills) and 0.08 (500) of the naive one at the median,
// and no reply relabeling the caller's data.
func TestOffering_LargeGoals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 172 agent turns")
	}
	qs := loadLargeQuestions(t)
	for _, c := range []struct {
		n        int
		maxRatio float64
	}{{100, 0.15}, {500, 0.08}} {
		t.Run(fmt.Sprint(c.n), func(t *testing.T) {
			out := measureLarge(t, c.n, qs)
			for k := range out.stepNeeded {
				if rate := float64(out.stepHit[k]) / float64(out.stepNeeded[k]); rate < 0.99 {
					t.Errorf("step %d: recall %.1f%%, want at least 99%%", k+1, 100*rate)
				}
			}
			if len(out.misses) > 0 {
				t.Logf("misses:\n%s", strings.Join(out.misses, "\n"))
			}
			if out.chitOffered > 0 || out.chitRan > 0 {
				t.Errorf("chit-chat: %d offered tools, %d ran a skill; want none", out.chitOffered, out.chitRan)
			}
			if r := sortedAt(out.ratios, 0.5); r > c.maxRatio {
				t.Errorf("first-request ratio median %.3f, want at most %.2f", r, c.maxRatio)
			}
			if out.relabeled > 0 {
				t.Errorf("%d of %d replies about another person relabeled the caller's data", out.relabeled, out.other)
			}
		})
	}
}
