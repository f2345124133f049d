package knowledge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/skills"
)

// ToolName is the built-in tool the agent searches the documents with.
const ToolName = "knowledge_search"

// offerTimeout bounds the check whether the sender may see any
// document, made while the run's turn is built.
const offerTimeout = 500 * time.Millisecond

// maxPending bounds the messages whose passages wait for their answer to
// be annotated (a run that never answers leaves its entry behind).
const maxPending = 4096

// Service is the knowledge base attached to a gateway: the
// knowledge_search tool bound to each message's verified sender, and the
// sources Hermes appends to an answer that used its passages.
type Service struct {
	s  gateway.Services
	kb *Base

	mu sync.Mutex
	// given are the passages the tool gave for each message, until its
	// answer is annotated.
	given map[string][]Passage
}

var (
	_ gateway.ChatToolFeature = (*Service)(nil)
	_ gateway.ReplyFeature    = (*Service)(nil)
)

// New is a knowledge service to attach to a gateway.
func New() *Service { return &Service{given: map[string][]Passage{}} }

// Attach implements gateway.Feature.
func (k *Service) Attach(s gateway.Services) error {
	k.s = s
	k.kb = BaseOf(s)
	return nil
}

// Base is the service's knowledge base.
func (k *Service) Base() *Base { return k.kb }

// callerOf is who a message's search is for: its verified sender, with
// the departments the directory gave (none when the lookup failed).
func callerOf(in channels.Inbound) Caller {
	return Caller{CorpID: in.Sender.CorpID, UserID: in.Sender.UserID, ChatID: in.ChatID, Depts: in.Sender.Dept}
}

func keyOf(in channels.Inbound) string {
	return strings.Join([]string{in.Channel, in.Account, in.ChatID, in.Sender.UserID, in.MsgID}, "\x1f")
}

// ChatTools implements gateway.ChatToolFeature: knowledge_search, when
// the sender may see any document. It is offered on every message the
// agent does not take for chit-chat (which is offered no tool): whether a
// question is about a rule cannot be told from the words of the
// documents, and a rule the documents lack is answered by saying so, not
// by 「没有可用的技能」.
func (k *Service) ChatTools(in channels.Inbound) []skills.Tool {
	if !k.kb.Cfg.On() || !k.anyVisible(in) {
		return nil
	}
	return []skills.Tool{&searchTool{k: k, in: in}}
}

// anyVisible: the sender may see a document.
func (k *Service) anyVisible(in channels.Inbound) bool {
	ctx, cancel := context.WithTimeout(context.Background(), offerTimeout)
	defer cancel()
	c := callerOf(in)
	var ok bool
	err := k.s.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM knowledge_documents d WHERE `+visibleSQL+`)`,
		c.CorpID, c.UserID, orEmpty(nonEmpty(c.Depts)), c.ChatID).Scan(&ok)
	if err != nil {
		k.s.Log.Warn("knowledge: offer check failed; offering knowledge_search", "err", err)
		return true
	}
	return ok
}

// CallConfirmed implements gateway.ChatToolFeature: knowledge_search
// never waits for a confirmation.
func (k *Service) CallConfirmed(context.Context, channels.Inbound, skills.Caller, string, json.RawMessage) (skills.Result, bool, error) {
	return skills.Result{}, false, nil
}

// searchTool is knowledge_search bound to one message's sender.
type searchTool struct {
	k  *Service
	in channels.Inbound
}

const searchParams = `{"type":"object","properties":{"query":{"type":"string","description":"the question, in the user's words"}},"required":["query"]}`

func (t *searchTool) Spec() skills.Spec {
	return skills.Spec{
		Name:        ToolName,
		DisplayName: "查询公司制度文档",
		Description: "Search the company's own documents (handbooks, policies, IT guides, office information) that this user may see. " +
			"Use it for questions about rules, allowances, procedures and how-tos. Answer only from the passages returned; " +
			"if they do not answer the question, say the documents do not cover it. Where passages disagree, follow the one in force " +
			"(the latest effective date) and say which version you used. Do not add source names: Hermes adds them.",
		Parameters:   json.RawMessage(searchParams),
		ReadOnly:     true,
		ParallelSafe: true,
		Synonyms:     []string{"制度", "规定", "政策", "手册", "流程", "标准", "怎么办"},
		Triggers:     skills.Triggers{Always: true},
		Documents:    true,
	}
}

func (t *searchTool) Call(ctx context.Context, args json.RawMessage) (skills.Result, error) {
	var a struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(args, &a); err != nil || strings.TrimSpace(a.Query) == "" {
		return skills.Result{}, fmt.Errorf("knowledge_search: a query is required")
	}
	ps, err := t.k.kb.Search(ctx, callerOf(t.in), a.Query)
	if err != nil {
		return skills.Result{}, err
	}
	t.k.remember(t.in, ps)
	return skills.Result{Status: 200, ContentType: "text/plain; charset=utf-8", Body: []byte(present(ps)), Skill: ToolName}, nil
}

// remember keeps the passages given for in until its answer is annotated.
func (k *Service) remember(in channels.Inbound, ps []Passage) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.given) >= maxPending {
		clear(k.given) // runs that never answered; the worst case is a missing sources line
	}
	key := keyOf(in)
	k.given[key] = append(k.given[key], ps...)
}

// Annotate implements gateway.ReplyFeature: the sources line of the
// documents whose passages the answer used, added by Hermes, and the
// run's trace step of the passages retrieved and cited. Only passages the
// tool gave this sender are candidates, so only documents they may see
// are named or traced; an answer that used none (「文档里没有」) names
// none, and is recorded as a gap (gaps.go).
func (k *Service) Annotate(ctx context.Context, in channels.Inbound, reply string) (string, []agent.Step) {
	key := keyOf(in)
	k.mu.Lock()
	ps, searched := k.given[key]
	delete(k.given, key)
	k.mu.Unlock()
	if !searched {
		return reply, nil
	}
	words := k.s.Config.Messages.Knowledge
	used := Used(reply, ps)
	var names []string
	for _, p := range used {
		if name := SourceOf(p, words.Page); !contains(names, name) {
			names = append(names, name)
		}
	}
	step := traceStep(ps, used, words.Page, k.s.Now())
	if reply != "" {
		k.record(ctx, in, ps, used)
	}
	if len(names) == 0 {
		return reply, []agent.Step{step}
	}
	return reply + "\n\n" + fmt.Sprintf(words.Sources, strings.Join(names, words.Separator)), []agent.Step{step}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
