package gatewaytest

import (
	"strings"
	"sync"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
)

// MemoryModel is a fake model that records each run's system prompt and
// answers the memory extraction call with Extracted, counting those calls.
type MemoryModel struct {
	mu       sync.Mutex
	systems  []string // the system prompt of each run's first call
	prompts  []string // the whole first request of each run, every message's text
	extracts int
	// Extracted answers the extraction call of user's text (no
	// memories when nil).
	Extracted func(user string) string
}

// Handle is the model's handler (openaitest.Server.SetHandler).
func (m *MemoryModel) Handle(req openai.ChatCompletionRequest) openaitest.Reply {
	m.mu.Lock()
	defer m.mu.Unlock()
	system, last := req.Messages[0].Content, req.Messages[len(req.Messages)-1]
	if strings.HasPrefix(system, "你负责为企业助手整理") {
		m.extracts++
		if m.Extracted == nil {
			return openaitest.Reply{Content: `{"memories":[]}`}
		}
		return openaitest.Reply{Content: m.Extracted(last.Content)}
	}
	if len(req.Messages) == 2 || last.Role == openai.ChatMessageRoleUser {
		m.systems = append(m.systems, system)
		var all []string
		for _, msg := range req.Messages {
			all = append(all, msg.Role+": "+msg.Content)
		}
		m.prompts = append(m.prompts, strings.Join(all, "\n"))
	}
	if last.Role == openai.ChatMessageRoleUser && strings.Contains(last.Content, "重置") {
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("it_password_reset", `{"system":"vpn"}`)}}
	}
	return openaitest.Reply{Content: "好的。"}
}

// LastSystem is the last run's system prompt.
func (m *MemoryModel) LastSystem() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.systems) == 0 {
		return ""
	}
	return m.systems[len(m.systems)-1]
}

// LastPrompt is the last run's first request, every message's text.
func (m *MemoryModel) LastPrompt() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.prompts) == 0 {
		return ""
	}
	return m.prompts[len(m.prompts)-1]
}

// ExtractCalls counts the extraction calls.
func (m *MemoryModel) ExtractCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.extracts
}
