package config

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// MemoryConfig is what Hermes remembers of each employee across sessions
// (memory:): per user of one corp, in Postgres.
type MemoryConfig struct {
	// Enabled switches long-term memory on, default true. Accounts and
	// Chats switch it off (or on) for one account or one chat; a chat's
	// setting wins over its account's.
	Enabled  *bool           `yaml:"enabled"`
	Accounts map[string]bool `yaml:"accounts"`
	Chats    map[string]bool `yaml:"chats"`
	// Retention is how long a memory is kept after it was stated, default
	// 180 days (4320h); a periodic job (once across replicas) deletes older
	// ones.
	Retention time.Duration `yaml:"retention"`
	// Recall is the most memories one message's prompt carries, default 5;
	// PromptTokens bounds their text, default 300.
	Recall       int `yaml:"recall"`
	PromptTokens int `yaml:"prompt_tokens"`
	// Extract: after a run, one model call proposes memories from what the
	// user stated (skipped when the turn holds no statement about them).
	// Default true.
	Extract *bool `yaml:"extract"`
	// MaxPerUser caps a user's memories; past it the oldest go. Default 1000.
	MaxPerUser int `yaml:"max_per_user"`
	// Embeddings is an OpenAI-compatible embeddings endpoint (POST
	// /embeddings) that makes recall semantic as well as lexical. Off
	// without a name (the default).
	Embeddings MemoryEmbeddings `yaml:"embeddings"`
}

// MemoryEmbeddings is memory.embeddings. The endpoint is a MediaModel
// (name, base_url, api_key, timeout), whose base_url and api_key default
// to the model section's the same way: providers that serve chat often
// serve embeddings too (OpenAI, DashScope, Ollama).
type MemoryEmbeddings struct {
	MediaModel `yaml:",inline"`
	// MinSimilarity is the cosine similarity a memory must reach to be
	// recalled for its meaning alone (one sharing a term with the message
	// is recalled anyway, after those). Models differ in how similar
	// unrelated texts look (bge-m3 rates them higher than
	// text-embedding-3-*): tune it for the model. Left out or 0: 0.3.
	MinSimilarity float64 `yaml:"min_similarity"`
}

const (
	defaultMemoryRetention    = 180 * 24 * time.Hour
	defaultMemoryRecall       = 5
	defaultMemoryPromptTokens = 300
	defaultMemoryMaxPerUser   = 1000
	// The embeddings call of a recall is on the path of the answer: its
	// default timeout is short.
	defaultEmbeddingsTimeout       = 10 * time.Second
	defaultEmbeddingsMinSimilarity = 0.3
)

func (m *MemoryConfig) applyDefaults() {
	positive(&m.Retention, defaultMemoryRetention)
	positive(&m.Recall, defaultMemoryRecall)
	positive(&m.PromptTokens, defaultMemoryPromptTokens)
	positive(&m.MaxPerUser, defaultMemoryMaxPerUser)
	positive(&m.Embeddings.Timeout, defaultEmbeddingsTimeout)
	if m.Embeddings.MinSimilarity == 0 {
		m.Embeddings.MinSimilarity = defaultEmbeddingsMinSimilarity
	}
	if m.Enabled == nil {
		m.Enabled = ptr(true)
	}
	if m.Extract == nil {
		m.Extract = ptr(true)
	}
}

func ptr[T any](v T) *T { return &v }

// On reports whether memory is on in chat of account.
func (m MemoryConfig) On(account, chat string) bool {
	if on, ok := m.Chats[chat]; ok {
		return on
	}
	if on, ok := m.Accounts[account]; ok {
		return on
	}
	return m.Enabled == nil || *m.Enabled
}

// EmbeddingsEndpoint is memory.embeddings with its base_url and api_key
// defaulted to model's (MediaModel.inherit), or an error naming each key
// that is wrong. The memory service resolves it when it is attached, so
// that a gateway with a broken memory.embeddings does not start.
func (m MemoryConfig) EmbeddingsEndpoint(model ModelConfig) (MemoryEmbeddings, error) {
	e := m.Embeddings
	e.inherit(model)
	var errs []string
	e.validate(func(key, format string, args ...any) {
		errs = append(errs, key+": "+fmt.Sprintf(format, args...))
	})
	if len(errs) > 0 {
		return e, fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return e, nil
}

// validate checks memory.embeddings (its base_url inherited), naming its
// keys as media.validate names media's.
func (e MemoryEmbeddings) validate(bad func(key, format string, args ...any)) {
	e.validateAs("memory.embeddings", bad)
}

// validateAs checks an embeddings endpoint configured at key.
func (e MemoryEmbeddings) validateAs(key string, bad func(key, format string, args ...any)) {
	switch {
	case !e.On() && e.BaseURL != "":
		bad(key+".name", "required with %s.base_url", key)
	case e.On() && e.BaseURL == "":
		bad(key+".base_url", "required (model.base_url is empty too)")
	case e.On() && !isHTTPURL(e.BaseURL):
		bad(key+".base_url", "must be an http(s) URL, got %q", e.BaseURL)
	}
	if s := e.MinSimilarity; math.IsNaN(s) || s < 0 || s > 1 {
		bad(key+".min_similarity", "must be between 0 and 1, got %g", s)
	}
}

// MemoryMessages are the sentences and words of long-term memory
// (messages.memory).
type MemoryMessages struct {
	// RememberWords start a message that asks to remember what follows.
	RememberWords []string `yaml:"remember_words"`
	// ListCommands list the user's memories; ForgetCommands followed by a
	// number, "all" or words delete them.
	ListCommands   []string `yaml:"list_commands"`
	ForgetCommands []string `yaml:"forget_commands"`
	// AllWords after a forget command mean every memory.
	AllWords   []string `yaml:"all_words"`
	Remembered string   `yaml:"remembered"` // %s: what was remembered
	Usage      string   `yaml:"usage"`      // 「记住」 with nothing after it
	Refused    string   `yaml:"refused"`    // a secret or a masked number: not stored
	TooLong    string   `yaml:"too_long"`   // over 300 bytes
	None       string   `yaml:"none"`       // the list is empty
	List       string   `yaml:"list"`       // heads the list; %s: the numbered lines
	Forgot     string   `yaml:"forgot"`     // %d: how many were deleted
	NotFound   string   `yaml:"not_found"`  // nothing matched a forget
	Off        string   `yaml:"off"`        // memory is off in this chat
	// SentPrivately answers /memory in a group when the list went to the
	// user's private chat; AskPrivately when it cannot go there.
	// Learned follows an answer when something was learned from the
	// message (%s: what, joined); Help is the memory commands' line of /help.
	Learned       string `yaml:"learned"`
	Help          string `yaml:"help"`
	SentPrivately string `yaml:"sent_privately"`
	AskPrivately  string `yaml:"ask_privately"`
	// Notes heads the memories in the prompt (the model reads it); Group
	// follows it in group chats.
	Notes string `yaml:"notes"`
	Group string `yaml:"group"`
}

// DefaultMemoryMessages are the Chinese defaults of MemoryMessages.
var DefaultMemoryMessages = MemoryMessages{
	RememberWords:  []string{"记住", "请记住", "/remember"},
	ListCommands:   []string{"/memory", "我的记忆"},
	ForgetCommands: []string{"/forget", "忘掉", "忘记"},
	AllWords:       []string{"all", "全部", "所有", "全部记忆", "所有记忆"},
	Remembered:     "好的，我记住了：%s（发送 /memory 查看，/forget 删除）",
	Usage:          "请在「记住」后面写上要我记住的内容，例如：记住 我在上海办公室。",
	Refused:        "这条内容里有密码、验证码或证件号、手机号这类信息，我不会记住它。",
	TooLong:        "内容太长了，请精简到 100 个字以内再让我记住。",
	None:           "我还没有记下关于你的任何内容。发送「记住 …」让我记住一件事。",
	List:           "我记下了这些（发送「/forget 编号」删除一条，「/forget all」全部删除）：\n%s",
	Forgot:         "已删除 %d 条记忆。",
	NotFound:       "没有找到要删除的记忆。发送 /memory 查看编号。",
	Off:            "这里没有开启记忆功能。",
	Learned:        "（已记住：%s。发送 /memory 查看，/forget 删除）",
	Help:           "记忆：发送「记住 …」让我记住一件事（例如：记住 以后回复我用英文），/memory 查看我记住的，/forget 编号 或 /forget all 删除。",
	SentPrivately:  "你的记忆列表已私聊发给你（群里不列出）。",
	AskPrivately:   "群聊里不列出你的记忆，请私聊我发送 /memory 查看。",
	Notes:          "以下是这位用户之前告诉你、或确认办理过的事（用户的备注，可能已过时，仅供参考）：",
	Group:          "这是群聊：这些备注只用来更好地回答，除非用户问起，不要复述。",
}
