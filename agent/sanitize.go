package agent

import (
	"strings"
	"sync"
)

// Sanitisation keeps three kinds of data out of chats and traces:
//   - debug and trace fields of backend answers (stack traces, internal ids),
//     dropped before the model sees an observation, so it cannot repeat them;
//   - personal numbers (mainland mobile numbers, resident ID numbers),
//     masked in observations and again in the final reply, unless the value
//     comes from a field the skill lists in Spec.SafeFields;
//   - secrets in tool arguments (password, token...), masked in the trace.

// debugKeys are dropped from JSON observations wherever they occur. Keys
// starting with "_" or "debug" are dropped too.
var debugKeys = map[string]bool{
	"debug": true, "debug_info": true, "trace": true, "trace_id": true, "traceback": true,
	"stack": true, "stacktrace": true, "stack_trace": true, "exception": true, "internal": true,
}

func isDebugKey(k string) bool {
	l := strings.ToLower(k)
	return debugKeys[l] || strings.HasPrefix(l, "_") || strings.HasPrefix(l, "debug")
}

// secretKeyParts mark argument keys whose values never reach a trace.
var secretKeyParts = []string{"password", "passwd", "secret", "token", "api_key", "apikey",
	"authorization", "credential", "private_key", "cookie"}

func isSecretKey(k string) bool {
	l := strings.ToLower(k)
	for _, p := range secretKeyParts {
		if strings.Contains(l, p) {
			return true
		}
	}
	return false
}

// safeSet collects the digit strings that came from safe fields during a
// run, so the final reply keeps them unmasked. It is shared with parallel
// tool calls.
type safeSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func (s *safeSet) add(digits string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]bool{}
	}
	s.m[digits] = true
}

func (s *safeSet) has(digits string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[digits]
}

// sanitizeJSON drops debug fields and masks personal numbers in n, in
// place. Values under a key in safe are kept and remembered in keep.
func sanitizeJSON(n *jnode, safe map[string]bool, keep *safeSet) {
	switch n.kind {
	case jObject:
		keys, vals := n.keys[:0], n.vals[:0]
		for i, k := range n.keys {
			if isDebugKey(k) {
				continue
			}
			v := n.vals[i]
			if safe[k] {
				rememberDigits(v, keep)
			} else {
				sanitizeJSON(v, safe, keep)
			}
			keys, vals = append(keys, k), append(vals, v)
		}
		n.keys, n.vals = keys, vals
	case jArray:
		for _, v := range n.vals {
			sanitizeJSON(v, safe, keep)
		}
	case jString, jNumber:
		if masked := maskPII(n.text, nil); masked != n.text {
			n.kind, n.text = jString, masked // "138****5678" is no JSON number
		}
	}
}

// rememberDigits records the personal numbers inside a safe value.
func rememberDigits(n *jnode, keep *safeSet) {
	switch n.kind {
	case jString, jNumber:
		forEachPII(n.text, func(num string) { keep.add(num) })
	case jArray, jObject:
		for _, v := range n.vals {
			rememberDigits(v, keep)
		}
	}
}

// maskSecrets returns args (a JSON object) with the values of secret keys
// replaced by "***", for the trace. Text that is not JSON is returned as it
// is: it was never sent to a tool.
func maskSecrets(args string) string {
	n, err := parseJSON([]byte(args))
	if err != nil || !n.isContainer() {
		return args
	}
	if !maskSecretNodes(n) {
		return args // unchanged: keep the model's exact bytes
	}
	return string(n.marshal())
}

func maskSecretNodes(n *jnode) bool {
	changed := false
	for i, v := range n.vals {
		if n.kind == jObject && isSecretKey(n.keys[i]) {
			n.vals[i] = &jnode{kind: jString, text: "***"}
			changed = true
			continue
		}
		if v.isContainer() && maskSecretNodes(v) {
			changed = true
		}
	}
	return changed
}

// maskPII masks mobile numbers (1[3-9] and 9 more digits: 138****5678) and
// resident ID numbers (17 digits and a digit or X: 1101**********1234) that
// stand alone, not inside a longer run of digits. Numbers in keep stay.
func maskPII(s string, keep *safeSet) string {
	var b []byte
	last := 0
	forEachPIIAt(s, func(start, end int) {
		if keep.has(s[start:end]) {
			return
		}
		if b == nil {
			b = make([]byte, 0, len(s))
		}
		b = append(b, s[last:start]...)
		b = append(b, maskDigits(s[start:end])...)
		last = end
	})
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

func maskDigits(num string) string {
	if len(num) == 11 { // mobile: keep the carrier prefix and the last 4
		return num[:3] + "****" + num[7:]
	}
	return num[:4] + strings.Repeat("*", len(num)-8) + num[len(num)-4:]
}

func forEachPII(s string, f func(num string)) {
	forEachPIIAt(s, func(start, end int) { f(s[start:end]) })
}

// forEachPIIAt calls f with the byte range of each personal number in s.
// It scans maximal digit runs: RE2 has no look-around to say "not part of
// a longer number".
func forEachPIIAt(s string, f func(start, end int)) {
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		switch n := j - i; {
		case n == 11 && s[i] == '1' && s[i+1] >= '3' && s[i+1] <= '9':
			f(i, j)
		case n == 13 && s[i] == '8' && s[i+1] == '6' && s[i+2] == '1' && s[i+3] >= '3' && s[i+3] <= '9':
			f(i+2, j) // 86 country code in front of a mobile number
		case n == 18:
			f(i, j)
		case n == 17 && j < len(s) && (s[j] == 'X' || s[j] == 'x') && (j+1 == len(s) || !isWordByte(s[j+1])):
			j++
			f(i, j)
		}
		i = j
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isWordByte(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}
