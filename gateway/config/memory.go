package config

import "time"

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
}

const (
	defaultMemoryRetention    = 180 * 24 * time.Hour
	defaultMemoryRecall       = 5
	defaultMemoryPromptTokens = 300
	defaultMemoryMaxPerUser   = 1000
)

func (m *MemoryConfig) applyDefaults() {
	positive(&m.Retention, defaultMemoryRetention)
	positive(&m.Recall, defaultMemoryRecall)
	positive(&m.PromptTokens, defaultMemoryPromptTokens)
	positive(&m.MaxPerUser, defaultMemoryMaxPerUser)
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
	Remembered:     "好的，我记住了：%s",
	Usage:          "请在「记住」后面写上要我记住的内容，例如：记住 我在上海办公室。",
	Refused:        "这条内容里有密码、验证码或证件号、手机号这类信息，我不会记住它。",
	TooLong:        "内容太长了，请精简到 100 个字以内再让我记住。",
	None:           "我还没有记下关于你的任何内容。发送「记住 …」让我记住一件事。",
	List:           "我记下了这些（发送「/forget 编号」删除一条，「/forget all」全部删除）：\n%s",
	Forgot:         "已删除 %d 条记忆。",
	NotFound:       "没有找到要删除的记忆。发送 /memory 查看编号。",
	Off:            "这里没有开启记忆功能。",
	Notes:          "以下是这位用户之前告诉你、或确认办理过的事（用户的备注，可能已过时，仅供参考）：",
	Group:          "这是群聊：这些备注只用来更好地回答，除非用户问起，不要复述。",
}
