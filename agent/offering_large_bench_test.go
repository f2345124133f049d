package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"regexp"
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
//     the caller's record as that person's (they name the person outside
//     the sentence saying others' data cannot be shown);
//   - unlabeled: replies showing a read-only personal skill's result
//     that do not say it is the asker's own (本人) nor address the asker
//     (你, 您);
//   - self-refused: replies to a question that is not about another
//     person saying others' data cannot be shown.
//
// Issue #37 added the defect classes: colleagues by nickname and title
// (with a noisy model that writes "self" as the subject for some of
// them), chit-chat that looks like a task, and two-step requests whose
// second step is another verb on another object. The held-out questions,
// written after the work, are measured the same way on their own
// (heldout_test.go).

const largeQuestionsFile = "testdata/catalog_large/questions.json"

type largeQuestion struct {
	Kind    string     `json:"kind"` // single, two_step, followup, chitchat, other
	Q       string     `json:"q"`
	History []string   `json:"history"`
	Steps   [][]string `json:"steps"`   // skills needed at each model step
	Subject string     `json:"subject"` // the person a question of kind "other" names
	// ModelSubject is what the noisy model writes as a personal call's
	// subject for a question of kind "other": "self" when it misreads
	// the question; empty: Subject.
	ModelSubject string `json:"model_subject"`
}

func loadLargeQuestions(tb testing.TB) []largeQuestion {
	tb.Helper()
	return loadQuestionFile(tb, largeQuestionsFile)
}

// loadQuestionFile reads a question set of the large catalogs.
func loadQuestionFile(tb testing.TB, file string) []largeQuestion {
	tb.Helper()
	b, err := os.ReadFile(file)
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
				args = withSubjectArg(filledArgs(t.Function.Parameters), t.Function.Parameters, m.subject())
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

// subject is what the model writes as whose data a personal call is
// about.
func (m *stepModel) subject() string {
	if m.q.Kind != "other" {
		return "self"
	}
	return cmpOr(m.q.ModelSubject, m.q.Subject)
}

// withSubjectArg sets the subject argument of a personal skill's schema
// (whose.go) in args.
func withSubjectArg(args string, params any, subject string) string {
	raw, _ := json.Marshal(params)
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(raw, &s)
	var obj map[string]any
	_ = json.Unmarshal([]byte(args), &obj)
	for name, p := range s.Properties {
		if p.Description == subjectDescription {
			obj[name] = subject
		}
	}
	b, _ := json.Marshal(obj)
	return string(b)
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
	personal, unlabeled int // replies after a personal skill answered, and those not saying whose
	selfRefused         int
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
	var calls, personal int
	tools := countedCatalog(n, &calls, &personal)
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	var out largeOutcome
	for _, q := range qs {
		calls, personal = 0, 0
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
				out.misses = append(out.misses, fmt.Sprintf("not offered: step %d of %q: want %v, offered %v", k+1, q.Q, want, names))
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
				out.misses = append(out.misses, fmt.Sprintf("relabeled: %q → %q", q.Q, res.Reply))
			}
		} else if strings.Contains(res.Reply, ownDataOnlyLead()) {
			out.selfRefused++
			out.misses = append(out.misses, fmt.Sprintf("refused: %q → %q", q.Q, res.Reply))
		}
		if personal > 0 {
			out.personal++
			if !containsAny(res.Reply, []string{"本人", "你", "您"}) {
				out.unlabeled++
				out.misses = append(out.misses, fmt.Sprintf("unlabeled: %q → %q", q.Q, res.Reply))
			}
		}
		ours := requestTokens(first.Messages, first.Tools)
		out.ratios = append(out.ratios, float64(ours)/float64(plainTokens(tools, benchQuestion{Q: q.Q, History: q.History})))
		out.index = append(out.index, float64(indexBlockTokens(first.Messages[0].Content)))
	}
	return out
}

// relabels reports whether a reply about subject presents the caller's
// data as the subject's: it names the subject outside the sentence saying
// others' data cannot be shown (with the subject in whatever words:
// 我师傅 for 师傅). A label of the caller's own data next to the
// subject's name does not excuse it.
func relabels(reply, subject string) bool {
	lead, tail, _ := strings.Cut(DefaultMessages().OwnDataOnly, "%s")
	refusal := regexp.MustCompile(regexp.QuoteMeta(lead) + `.{1,40}?` + regexp.QuoteMeta(tail))
	return strings.Contains(refusal.ReplaceAllString(reply, ""), subject)
}

// ownDataOnlyLead is the start of the sentence saying others' data
// cannot be shown.
func ownDataOnlyLead() string {
	lead, _, _ := strings.Cut(DefaultMessages().OwnDataOnly, "%s")
	return lead
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
			b.ReportMetric(float64(out.unlabeled), "unlabeled")
			b.ReportMetric(float64(out.selfRefused), "self-refused")
			b.Logf("%d questions, %d chit-chat, %d about others, %d showed personal results; step 1 %d/%d, step 2 %d/%d",
				len(qs), out.chitchat, out.other, out.personal, out.stepHit[0], out.stepNeeded[0], out.stepHit[1], out.stepNeeded[1])
			for _, m := range out.misses {
				b.Logf("%s", m)
			}
		})
	}
}

// TestOffering_LargeGoals holds the goals of issue #22 on the generated
// catalogs: the skill of every step on offer for at least 99% of the
// requests, no tool offered or run for chit-chat, the first request at
// most 0.15 (100 skills) and 0.08 (500) of the naive one at the median,
// and (issue #37) no reply relabeling the caller's data, no personal
// result shown without saying whose, no question about oneself refused.
func TestOffering_LargeGoals(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 212 agent turns")
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
			if out.unlabeled > 0 || out.selfRefused > 0 {
				t.Errorf("%d of %d personal results shown without saying whose; %d questions not about others refused",
					out.unlabeled, out.personal, out.selfRefused)
			}
		})
	}
}
