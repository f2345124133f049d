package agent

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Writes: a skill that is not read-only (skills.Spec.ReadOnly false, the
// default) changes something: it creates a ticket, books a room, submits a
// request. Models repeat calls (they lose track, or retry to be sure), and
// a repeated write is a second ticket. So within a run an identical call
// (same skill, same normalised arguments) of a write that succeeded is not
// run again: the model gets the earlier result, marked "already done".
// Across runs (a crash, a retried job) the backend is the one to drop a
// repeat: skills sends an Idempotency-Key derived from the message and the
// call.
//
// A call that failed transiently (5xx, timeout, an open or half-open
// breaker: the "unavailable" class) is not done, so retrying it is allowed
// and does not count as a repeat: the model is told it may try once more,
// and that must hold.

// callKey identifies a call for repeats: the skill and its canonical
// arguments.
func callKey(name string, args []byte) string { return name + " " + canonicalJSON(args) }

// alreadyDone is the observation of a write that is not run again.
func alreadyDone(earlier string) string {
	return "already done: this exact call already succeeded in this task and was not run again. Its result:\n" + earlier
}

// isWrite reports whether a call changes something.
func isWrite(c *callResult) bool { return c.entry != nil && !c.entry.spec.ReadOnly }

// dedupeWrites marks, before anything runs, the calls of a round that
// repeat a write: one that succeeded earlier in the run is answered at once
// from its result; one identical to an earlier call of the same round
// waits for that call's outcome (settleDuplicates).
func (r *run) dedupeWrites(results []*callResult) {
	first := map[string]*callResult{}
	for _, c := range results {
		if !c.runnable || !isWrite(c) {
			continue
		}
		key := callKey(c.call.Function.Name, c.args)
		if earlier, ok := r.writes[key]; ok {
			c.runnable = false
			c.obs = observation{text: alreadyDone(earlier)}
			c.deltas = append(c.deltas, "write not repeated: already done in this run")
			continue
		}
		if f, ok := first[key]; ok {
			c.runnable, c.dupOf = false, f
			continue
		}
		first[key] = c
	}
}

// settleDuplicates gives calls that repeated a write of the same round the
// outcome of the call they repeated.
func settleDuplicates(results []*callResult) {
	for _, c := range results {
		f := c.dupOf
		switch {
		case f == nil:
		case f.obs.ok:
			c.obs = observation{text: alreadyDone(f.obs.text)}
			c.deltas = append(c.deltas, "write not repeated: identical to an earlier call of this round")
		default:
			c.obs = observation{text: "not run: it is identical to an earlier call of this round, which did not succeed (see its result)"}
		}
	}
}

// transient reports whether a call failed in a way a retry may fix.
func transient(c *callResult) bool { return c.obs.fail != nil && c.obs.fail.counts }

// Facts: a partial answer (the run stopped before the model answered)
// keeps what the user would otherwise lose, such as the number of a ticket
// that was created. They come from a successful skill's answer: its
// summary, else its identifiers.

// maxFactRunes bounds one fact in the partial answer.
const maxFactRunes = 160

// callerKeys are identifier fields of the caller, left out of facts.
var callerKeys = map[string]bool{"employee_id": true, "user_id": true, "userid": true, "staff_id": true, "caller_id": true, "employee_no": true}

// factKeys are answer fields that state the outcome in a sentence.
var factKeys = []string{"summary", "message", "result"}

// factOf is the fact a successful observation establishes, "" when none.
func factOf(obs observation) string {
	doc := obs.doc
	if doc == nil && strings.HasPrefix(obs.text, "{") {
		doc, _ = parseJSON([]byte(obs.text)) // the async acknowledgement is JSON
	}
	if doc == nil || doc.kind != jObject {
		return ""
	}
	for _, k := range factKeys {
		if v := doc.get(k); v != nil && v.kind == jString && strings.TrimSpace(v.text) != "" {
			return cutRunes(strings.TrimSpace(v.text), maxFactRunes)
		}
	}
	// Identifiers by value: users read 「INC-1004」, not 「ticket_id
	// INC-1004」, and the line already names the skill. The caller's own id
	// says nothing they do not know.
	var ids []string
	for i, k := range doc.keys {
		v := doc.vals[i]
		lower := strings.ToLower(k)
		if (v.kind == jString || v.kind == jNumber) && !callerKeys[lower] && (lower == "id" || strings.HasSuffix(lower, "_id") ||
			strings.HasSuffix(lower, "_no") || strings.HasSuffix(lower, "number")) {
			ids = append(ids, v.text)
		}
	}
	return cutRunes(strings.Join(ids, ", "), maxFactRunes)
}

func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// addFact records a fact once, in the order learnt.
func (p *progress) addFact(tool, fact string) {
	if fact == "" {
		return
	}
	line := fmt.Sprintf("%s：%s", tool, fact)
	if !slices.Contains(p.facts, line) {
		p.facts = append(p.facts, line)
	}
}
