package skills

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// HeaderTraceparent is the W3C Trace Context header every skill request
// carries, so a backend's traces join the agent run's.
const HeaderTraceparent = "traceparent"

// traceparent builds "00-<trace-id>-<span-id>-01" for one request: the
// trace id is the run's (Caller.TraceID), the span id is fresh.
func traceparent(c Caller) string {
	return "00-" + TraceID(c.TraceID) + "-" + newSpanID() + "-01"
}

// TraceID turns a run id into a W3C trace id (32 lowercase hex digits, not
// all zero): a run id that already is one (or a UUID) is used as is, any
// other is hashed so the same run always maps to the same trace; an empty
// one gets a random id.
func TraceID(runID string) string {
	id := strings.ToLower(strings.ReplaceAll(runID, "-", ""))
	if isHex(id) && len(id) == 32 && strings.Trim(id, "0") != "" {
		return id
	}
	if runID == "" {
		return randomHex(16)
	}
	sum := sha256.Sum256([]byte(runID))
	return hex.EncodeToString(sum[:16])
}

func isHex(s string) bool {
	for _, r := range s {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

func newSpanID() string { return randomHex(8) }

// randomHex returns n random bytes as hex, never all zero (W3C forbids it).
func randomHex(n int) string {
	b := make([]byte, n)
	for {
		_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
		for _, x := range b {
			if x != 0 {
				return hex.EncodeToString(b)
			}
		}
	}
}
