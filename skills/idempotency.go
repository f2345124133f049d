package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// HeaderIdempotencyKey carries a key that is the same for every attempt of
// the same call made for the same message, so a backend can drop a repeat
// of a write: a retried attempt, the agent calling again, or the whole job
// run again after a crash. Skills that are read_only do not send it.
const HeaderIdempotencyKey = "Idempotency-Key"

// idempotencyKey derives the key of a write from the message it serves and
// the call: who asked, where, which message (Caller.Origin, or the run's
// TraceID on paths without an inbound message), the skill and its
// arguments with keys sorted. It is a hash: it carries no argument values
// to logs or proxies. Read-only skills get "".
func idempotencyKey(s *Skill, c Caller, args json.RawMessage) string {
	if s.ReadOnly {
		return ""
	}
	message := c.TraceID
	if c.Origin != 0 {
		message = strconv.FormatInt(int64(c.Origin), 10) // as the key was before Origin had a type
	}
	canonical := args
	var v any
	if json.Unmarshal(args, &v) == nil {
		if b, err := json.Marshal(v); err == nil { // maps marshal with sorted keys
			canonical = b
		}
	}
	h := sha256.New()
	for _, part := range []string{"hermes-idempotency-v1", c.Channel, c.Account, c.CorpID, c.ChatID, c.UserID,
		message, s.Name, string(canonical)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
