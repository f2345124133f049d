package skills

import (
	"fmt"
	"regexp"
	"strings"
)

// validate compiles every regular expression, so a typo fails at load
// rather than silently never matching.
func (t Triggers) validate() error {
	for i, expr := range t.IntentRegex {
		if _, err := regexp.Compile(expr); err != nil {
			return fmt.Errorf("intent_regex[%d]: %w", i, err)
		}
	}
	return nil
}

// Empty reports whether no trigger is set; such a tool is offered by the
// agent's own rules (usually: always).
func (t Triggers) Empty() bool {
	return !t.Always && len(t.IntentContains) == 0 && len(t.IntentRegex) == 0
}

// Match reports whether text makes the tool relevant (seed 003's match
// rules): Always, any IntentContains substring (case-insensitive), or any
// IntentRegex. Empty triggers match everything. An expression that does not
// compile never matches (definitions are validated at load).
func (t Triggers) Match(text string) bool {
	if t.Empty() || t.Always {
		return true
	}
	lower := strings.ToLower(text)
	for _, word := range t.IntentContains {
		if strings.Contains(lower, strings.ToLower(word)) {
			return true
		}
	}
	for _, expr := range t.IntentRegex {
		if re, err := regexp.Compile(expr); err == nil && re.MatchString(text) {
			return true
		}
	}
	return false
}
