package knowledge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
	"github.com/hermes-gw/hermes/skills"
)

// The company corpus of testdata/bench: 24 documents of a fictional
// company in seven formats (an outdated version beside the current one,
// documents limited to a department or to named users, tables, a
// fourteen-page PDF) and the questions employees type about them
// (questions.tsv: colloquial, abbreviated, misspelt, some nobody's
// documents answer, some asked by people outside the answering document's
// audience). TestCorpus guards it in `make test`; BenchmarkKnowledge
// prints its figures in `make bench`.

const benchDir = "testdata/bench"

// askers are the corpus' employees and their departments: 2 研发,
// 5 财务, 7 销售, 9 人力资源, 1 总裁办.
var askers = map[string][]string{
	"zhangsan": {"2"}, "zhaofin": {"5"}, "sunsales": {"7"}, "lihr": {"9"}, "wangceo": {"1"},
}

// benchDoc is one line of corpus.tsv.
type benchDoc struct {
	file, title, key, version string
	effective                 time.Time
	depts, users              []string
}

// sees reports whether asker is in the document's audience (the corp is
// everyone's): the rule the benchmark holds the search to, written
// independently of it.
func (d benchDoc) sees(asker string) bool {
	if len(d.depts) == 0 && len(d.users) == 0 {
		return true
	}
	if slices.Contains(d.users, asker) {
		return true
	}
	for _, dept := range askers[asker] {
		if slices.Contains(d.depts, dept) {
			return true
		}
	}
	return false
}

// newDocument is the document as an operator adds it: the real file
// (PDF, DOCX and XLSX written from their text sources), its name, title,
// version and audience.
func (d benchDoc) newDocument(t testing.TB) knowledge.NewDocument {
	src, err := os.ReadFile(filepath.Join(benchDir, "docs", d.file))
	if err != nil {
		t.Fatal(err)
	}
	name, data := d.file, src
	switch {
	case strings.HasSuffix(d.file, ".pdf.txt"):
		name, data = strings.TrimSuffix(d.file, ".txt"), pdfOf(string(src))
	case strings.HasSuffix(d.file, ".docx.txt"):
		name, data = strings.TrimSuffix(d.file, ".txt"), docxOf(t, string(src))
	case strings.HasSuffix(d.file, ".xlsx.csv"):
		name, data = strings.TrimSuffix(d.file, ".csv"), xlsxOf(t, d.title, string(src))
	}
	n := knowledge.NewDocument{Name: name, Data: data, Title: d.title, Key: d.key, Version: d.version, Effective: d.effective,
		Audience: knowledge.Audience{Corps: []string{corp}, Departments: d.depts, Users: d.users}, Source: d.file}
	return n
}

// benchQuestion is one line of questions.tsv.
type benchQuestion struct {
	asker, text string
	title       string // the document that answers, "" for none
	want        string // text its passage holds
	outsider    bool   // a document answers, but not for this asker
}

func (q benchQuestion) answerable() bool { return q.title != "" }

func readTSV(t testing.TB, name string, cols int) [][]string {
	f, err := os.Open(filepath.Join(benchDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != cols {
			t.Fatalf("%s: %q has %d fields, want %d", name, line, len(fields), cols)
		}
		for i, f := range fields {
			if f == "-" {
				fields[i] = ""
			}
		}
		out = append(out, fields)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func loadCorpus(t testing.TB) ([]benchDoc, []benchQuestion) {
	var docs []benchDoc
	for _, f := range readTSV(t, "corpus.tsv", 7) {
		d := benchDoc{file: f[0], title: f[1], key: f[2], version: f[3], depts: list(f[5]), users: list(f[6])}
		if f[4] != "" {
			eff, err := time.Parse(time.DateOnly, f[4])
			if err != nil {
				t.Fatal(err)
			}
			d.effective = eff
		}
		docs = append(docs, d)
	}
	return docs, readQuestions(t, "questions.tsv")
}

// readQuestions reads a question file of testdata/bench.
func readQuestions(t testing.TB, name string) []benchQuestion {
	var qs []benchQuestion
	for _, f := range readTSV(t, name, 4) {
		q := benchQuestion{asker: f[0], text: f[1], title: f[2], want: f[3]}
		if q.want == "outsider" {
			q.want, q.outsider = "", true
		}
		if _, ok := askers[q.asker]; !ok {
			t.Fatalf("%s: unknown asker %q", name, q.asker)
		}
		qs = append(qs, q)
	}
	return qs
}

// corpusService is a knowledge service over a fresh database holding the
// corpus, its knowledge section taken from yaml (embeddings, results).
func corpusService(t testing.TB, knowledgeYAML string) (*knowledge.Service, *config.Config, []benchDoc, []benchQuestion) {
	t.Helper()
	pool := storetest.NewPool(t)
	cfg, err := config.ParseConfig([]byte("database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"+knowledgeYAML),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	k := knowledge.New()
	if err := k.Attach(gateway.Services{Config: cfg, Pool: pool, Now: func() time.Time { return t0 },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
		t.Fatal(err)
	}
	docs, qs := loadCorpus(t)
	for _, d := range docs {
		if _, err := k.Base().Add(context.Background(), d.newDocument(t)); err != nil {
			t.Fatalf("add %s: %v", d.file, err)
		}
	}
	return k, cfg, docs, qs
}

// askModel plays a model that searches the documents with the user's
// words whenever knowledge_search is offered, and keeps every request.
type askModel struct {
	reqs []openai.ChatCompletionRequest
}

func (m *askModel) Chat(_ context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionResponse, error) {
	m.reqs = append(m.reqs, req)
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: "好的。"}
	last := req.Messages[len(req.Messages)-1]
	offered := slices.ContainsFunc(req.Tools, func(t openai.Tool) bool { return t.Function != nil && t.Function.Name == knowledge.ToolName })
	if last.Role == openai.ChatMessageRoleUser && offered {
		args, _ := json.Marshal(map[string]string{"query": last.Content})
		msg = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: "call_1",
			Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: knowledge.ToolName, Arguments: string(args)}}}}
	}
	return openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: msg}}}, nil
}

// given are the passages that reached the model: those of the
// knowledge_search results in its requests, as the model read them, one
// per document: its title line and the text of its passages.
type given struct {
	Source string
	Text   string
}

// readResult parses a knowledge_search result as the model reads it
// (present.go): blocks separated by a blank line, each a document's
// title line (《title》version…) and its passages; a text not starting
// with a title line gives none.
func readResult(content string) []given {
	if !strings.HasPrefix(content, "《") {
		return nil
	}
	var out []given
	for _, block := range strings.Split(content, "\n\n") {
		head, text, _ := strings.Cut(block, "\n")
		out = append(out, given{Source: head, Text: text})
	}
	return out
}

// asked is what one question put before the model.
type asked struct {
	passages      []given
	first, second int // tokens of the first request, and of the one carrying the passages (0: none)
	// bare is the tokens of the request carrying the passages with the
	// tool's result emptied: "the same request without them", read
	// literally (it has the model's call of the tool, which the first
	// request has not).
	bare int
}

// ask runs q through the agent as the gateway would (the default system
// prompt, the tools offered to its asker, with the skills of catalog
// when there is one) with askModel.
func ask(t testing.TB, k *knowledge.Service, cfg *config.Config, catalog *skills.Registry, i int, q benchQuestion) asked {
	in := channels.Inbound{Channel: "wecom", Account: "app", MsgID: fmt.Sprintf("q%d", i), ChatID: q.asker, Text: q.text,
		Sender: channels.Identity{UserID: q.asker, CorpID: corp, Dept: askers[q.asker]}}
	m := &askModel{}
	tools := k.ChatTools(in)
	if catalog != nil {
		tools = append(tools, catalog.ToolsFor(skills.Caller{UserID: q.asker, Channel: in.Channel, CorpID: corp, ChatID: q.asker, Depts: askers[q.asker]})...)
	}
	_, err := agent.Run(context.Background(), m, agent.Turn{SystemPrompt: cfg.Agent.SystemPrompt, UserText: q.text, Tools: tools},
		agent.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("%q: %v", q.text, err)
	}
	var a asked
	for n, req := range m.reqs {
		if n == 0 {
			a.first = agent.RequestTokens(req)
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role != openai.ChatMessageRoleTool {
			continue
		}
		a.passages = append(a.passages, readResult(last.Content)...)
		if a.second == 0 {
			a.second = agent.RequestTokens(req)
			bare := req
			bare.Messages = append(slices.Clone(req.Messages[:len(req.Messages)-1]), openai.ChatCompletionMessage{Role: last.Role, ToolCallID: last.ToolCallID})
			a.bare = agent.RequestTokens(bare)
		}
	}
	return a
}

// figures are the corpus' measures.
type figures struct {
	answerable, found  int       // questions a document answers for their asker; of them, with the passage at the model's input
	missed             []string  // the answerable questions not found
	leaks              []string  // passages of a document outside the asker's audience that reached the model
	outdated           []string  // passages of a superseded version that reached the model
	unanswerable       int       // questions no document answers
	unanswerableGiven  []string  // of them, those given a passage
	outsiders          int       // questions only a document outside the asker's audience answers
	ratios             []float64 // tokens of the request carrying the passages ÷ those of the first request, sorted
	bareRatios         []float64 // the same ÷ those of that request with the tool's result emptied, sorted
	firsts, seconds    []float64 // their tokens, sorted
	passagesPerAnswer  float64
	questions, offered int
}

func (f figures) recall() float64 { return float64(f.found) / float64(max(f.answerable, 1)) }

// evaluate asks every question and measures what reached the model.
func evaluate(t testing.TB, k *knowledge.Service, cfg *config.Config, catalog *skills.Registry, docs []benchDoc, qs []benchQuestion) figures {
	byTitle := map[string][]benchDoc{}
	for _, d := range docs {
		byTitle[d.title] = append(byTitle[d.title], d)
	}
	current := func(d benchDoc) bool {
		for _, o := range byTitle[d.title] {
			if o.effective.After(d.effective) {
				return false
			}
		}
		return true
	}
	var f figures
	passages := 0
	for i, q := range qs {
		a := ask(t, k, cfg, catalog, i, q)
		f.questions++
		if a.second > 0 {
			f.offered++
		}
		for _, p := range a.passages {
			for _, d := range docs {
				if !strings.HasPrefix(p.Source, "《"+d.title+"》"+d.version) || (d.version == "" && len(byTitle[d.title]) > 1) {
					continue
				}
				if !d.sees(q.asker) {
					f.leaks = append(f.leaks, q.asker+": "+q.text+" → "+p.Source)
				}
				if !current(d) {
					f.outdated = append(f.outdated, q.text+" → "+p.Source)
				}
			}
		}
		switch {
		case q.outsider:
			f.outsiders++
		case !q.answerable():
			f.unanswerable++
			if len(a.passages) > 0 {
				f.unanswerableGiven = append(f.unanswerableGiven, fmt.Sprintf("%s → %s", q.text, a.passages[0].Source))
			}
		default:
			f.answerable++
			passages += len(a.passages)
			if a.first > 0 && a.second > 0 {
				f.ratios = append(f.ratios, float64(a.second)/float64(a.first))
				f.bareRatios = append(f.bareRatios, float64(a.second)/float64(a.bare))
				f.firsts, f.seconds = append(f.firsts, float64(a.first)), append(f.seconds, float64(a.second))
			}
			hit := slices.ContainsFunc(a.passages, func(p given) bool {
				return strings.HasPrefix(p.Source, "《"+q.title+"》") && strings.Contains(p.Text, q.want)
			})
			if hit {
				f.found++
			} else {
				f.missed = append(f.missed, q.text)
			}
		}
	}
	f.passagesPerAnswer = float64(passages) / float64(max(f.answerable, 1))
	slices.Sort(f.ratios)
	slices.Sort(f.bareRatios)
	slices.Sort(f.firsts)
	slices.Sort(f.seconds)
	return f
}

// TestCorpus guards the corpus' figures without embeddings: no passage
// outside its asker's audience and no superseded version reaches the
// model, and the passage answering a question is at the model's input
// for at least 90% of them.
func TestCorpus(t *testing.T) {
	k, cfg, docs, qs := corpusService(t, "")
	if len(docs) < 20 || len(qs) < 100 {
		t.Fatalf("corpus of %d documents and %d questions, want at least 20 and 100", len(docs), len(qs))
	}
	f := evaluate(t, k, cfg, nil, docs, qs)
	t.Logf("recall@5 %.1f%% (%d/%d); missed: %s", 100*f.recall(), f.found, f.answerable, strings.Join(f.missed, " | "))
	t.Logf("unanswerable given a passage: %d/%d: %s", len(f.unanswerableGiven), f.unanswerable, strings.Join(f.unanswerableGiven, " | "))
	if len(f.leaks) > 0 {
		t.Errorf("passages reached askers outside their document's audience:\n%s", strings.Join(f.leaks, "\n"))
	}
	if len(f.outdated) > 0 {
		t.Errorf("superseded versions reached the model:\n%s", strings.Join(f.outdated, "\n"))
	}
	if f.recall() < 0.90 {
		t.Errorf("lexical recall@5 %.1f%%, want at least 90%%", 100*f.recall())
	}
}
