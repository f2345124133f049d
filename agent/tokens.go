package agent

import (
	"encoding/json"
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	openai "github.com/sashabaranov/go-openai"
)

// tokenEncoding is cl100k_base: exact for OpenAI's GPT-4 family and a close
// enough estimate for DeepSeek and Qwen, whose tokenizers are not public in
// Go. Budgets are estimates either way.
const tokenEncoding = "cl100k_base"

// The tiktoken library keeps its BPE loader in a package variable and its
// default loader downloads the ranks, which fails offline. This is the one
// place that sets it, once, to the embedded offline loader.
var (
	encOnce sync.Once
	enc     *tiktoken.Tiktoken
)

func encoder() *tiktoken.Tiktoken {
	encOnce.Do(func() {
		tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
		e, err := tiktoken.GetEncoding(tokenEncoding)
		if err == nil {
			enc = e
		}
	})
	return enc
}

// Counting tokens is most of a turn's own CPU time (the BPE pre-split is a
// backtracking regexp), and the long texts repeat from turn to turn: the
// system prompt with its skill index, the tools block, the session's
// history, tool names and descriptions. Counts are memoised, keyed by a
// hash of the text; the cache is dropped whole when it reaches
// cacheMaxEntries, which bounds its memory without bookkeeping (texts
// seen once per turn refill it slowly).
const cacheMaxEntries = 4096

var (
	countSeed    = maphash.MakeSeed()
	countCache   sync.Map // uint64 → int
	countEntries atomic.Int64
)

// countTokens estimates the tokens of s. Without an encoder (which only
// happens if the embedded ranks are broken) it falls back to a rough rule:
// a token per CJK rune or per 4 bytes of other text.
func countTokens(s string) int {
	if s == "" {
		return 0
	}
	key := maphash.String(countSeed, s)
	if n, ok := countCache.Load(key); ok {
		return n.(int)
	}
	n := countUncached(s)
	if countEntries.Add(1) > cacheMaxEntries {
		countCache.Clear()
		countEntries.Store(1)
	}
	countCache.Store(key, n)
	return n
}

// RequestTokens estimates the prompt tokens of req as the loop budgets
// them: each message's text and tool calls with its framing, and each
// tool's name, description and schema with theirs. Benchmarks outside
// the agent (gateway/knowledge's) compare requests with it.
func RequestTokens(req openai.ChatCompletionRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += countTokens(m.Content) + perMessageTokens
		for _, p := range m.MultiContent {
			n += countTokens(p.Text)
		}
		for _, c := range m.ToolCalls {
			n += countTokens(c.Function.Name) + countTokens(c.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		if t.Function == nil {
			continue
		}
		params, _ := json.Marshal(t.Function.Parameters) // a schema from JSON: always marshals
		n += perToolTokens + countTokens(t.Function.Name) + countTokens(t.Function.Description) + countTokens(string(params))
	}
	return n
}

func countUncached(s string) int {
	if s == "" {
		return 0
	}
	if e := encoder(); e != nil {
		return len(e.EncodeOrdinary(s))
	}
	n, other := 0, 0
	for _, r := range s {
		if r >= 0x2E80 {
			n++
		} else {
			other++
		}
	}
	return n + (other+3)/4
}

// truncateTokens keeps the first head and the last tail tokens of s and
// reports how many tokens s had. Token boundaries can fall inside a
// multi-byte character; the partial bytes are dropped.
func truncateTokens(s string, head, tail int) (string, string, int) {
	e := encoder()
	if e == nil {
		runes := []rune(s)
		if len(runes) <= head+tail {
			return s, "", len(runes)
		}
		return string(runes[:head]), string(runes[len(runes)-tail:]), len(runes)
	}
	toks := e.EncodeOrdinary(s)
	if len(toks) <= head+tail {
		return s, "", len(toks)
	}
	h := validPrefix(e.Decode(toks[:head]))
	t := validSuffix(e.Decode(toks[len(toks)-tail:]))
	return h, t, len(toks)
}

// validPrefix drops a character cut at the end of s.
func validPrefix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0 && !utf8.ValidString(s); i++ {
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "")
}

// validSuffix drops a character cut at the start of s.
func validSuffix(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0 && !utf8.ValidString(s); i++ {
		s = s[1:]
	}
	return strings.ToValidUTF8(s, "")
}
