package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/skills"
)

// recordingArchive is an agent.Archive that shows what was archived.
type recordingArchive struct {
	mu    sync.Mutex
	texts map[string]string // runID/ref → text
}

func (a *recordingArchive) Put(_ context.Context, runID, text string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.texts == nil {
		a.texts = map[string]string{}
	}
	ref := fmt.Sprintf("ref-%d", len(a.texts)+1)
	a.texts[runID+"/"+ref] = text
	return ref, nil
}

func (a *recordingArchive) Get(_ context.Context, runID, ref string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	text, ok := a.texts[runID+"/"+ref]
	if !ok {
		return "", agent.ErrNotArchived
	}
	return text, nil
}

var archivedRE = regexp.MustCompile(`\[archived: ([^\]]+)\]`)

func report(n int) string {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "report %d line %d: attendance normal, overtime 2 hours, leave none\n", n, i)
	}
	return b.String()
}

func TestRun_CompressionKeepsGoalAndRecentSteps(t *testing.T) {
	srv, m := newModel(t)
	// The model reads reports 1, 2, 3 ..., fetches the first one back once
	// it was archived, then answers.
	srv.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		searches, recalled := 0, false
		for _, msg := range req.Messages {
			for _, c := range msg.ToolCalls {
				searches += map[bool]int{true: 1}[c.Function.Name == "report"]
				recalled = recalled || c.Function.Name == "recall_observation"
			}
		}
		if recalled {
			return answer("三份报告都正常。")
		}
		for _, msg := range req.Messages {
			if m := archivedRE.FindStringSubmatch(msg.Content); m != nil && strings.Contains(msg.Content, "report") {
				return call("recall_observation", fmt.Sprintf(`{"ref": %q}`, m[1]))
			}
		}
		return call("report", fmt.Sprintf(`{"n": %d}`, searches+1))
	})
	tools := []skills.Tool{&fakeTool{name: "report", params: `{"type":"object","properties":{"n":{"type":"integer"}}}`,
		call: func(_ context.Context, args json.RawMessage) (skills.Result, error) {
			var a struct{ N int }
			_ = json.Unmarshal(args, &a)
			return skills.Result{Status: 200, ContentType: "text/plain", Body: []byte(report(a.N))}, nil
		}}}
	archive := &recordingArchive{}
	opts := testOptions()
	opts.ContextWindow = 2600 // three reports pass 70% of it, two do not
	opts.KeepRecentSteps = 1
	opts.Archive = archive
	opts.MaxSteps = 10
	turn := testTurn("检查我这三个月的考勤报告有没有问题", tools)

	res, err := agent.Run(context.Background(), m, turn, opts)
	if err != nil || res.StopReason != agent.StopFinished {
		t.Fatalf("Run = %q %q, %v", res.StopReason, res.Reply, err)
	}
	reqs := srv.Requests()
	first, last := reqs[0], reqs[len(reqs)-1]
	// System prompt and the user's goal stay verbatim.
	if last.Messages[0].Content != first.Messages[0].Content || last.Messages[1].Content != turn.UserText {
		t.Errorf("system prompt or goal changed by compression")
	}
	var results []openai.ChatCompletionMessage
	for _, msg := range last.Messages {
		if msg.Role == openai.ChatMessageRoleTool {
			results = append(results, msg)
		}
	}
	if len(results) != 4 {
		for _, s := range res.Steps {
			t.Logf("%d %s %s %s %v", s.N, s.Kind, s.Tool, s.Args, s.Delta)
		}
		t.Fatalf("tool messages = %d, want 3 reports and a recall", len(results))
	}
	for i, msg := range results[:2] {
		if !strings.HasPrefix(msg.Content, "[archived: ref-") || !strings.Contains(msg.Content, "First lines: report") {
			t.Errorf("report %d = %.120q, want an extractive summary with its reference", i+1, msg.Content)
		}
	}
	if results[2].Content != report(3) {
		t.Errorf("the last step's report was changed: %.120q", results[2].Content)
	}
	if results[3].Content != report(1) {
		t.Errorf("recall_observation returned %.120q, want report 1 in full", results[3].Content)
	}
	if len(archive.texts) != 2 || archive.texts["r1/ref-1"] != report(1) {
		t.Errorf("archive = %d texts, want reports 1 and 2 under run r1", len(archive.texts))
	}
	if slices.Contains(toolNames(first), "recall_observation") || !slices.Contains(toolNames(last), "recall_observation") {
		t.Errorf("recall_observation should be offered once something is archived")
	}
	if !anyDelta(res.Steps, "compressed 2 observations (archived: ref-1, ref-2)") {
		t.Errorf("no step records the compression")
	}
}
