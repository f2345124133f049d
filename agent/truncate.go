package agent

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Observations are cut to Options.MaxObservationBytes. Text keeps its head
// and its tail (a summary at the start, a conclusion or error at the end);
// JSON is shrunk structurally and re-encoded, so the model never gets a
// broken document it would misread.

// cutHeadTail keeps about two thirds of limit from the start of s and the
// rest from the end, on rune boundaries, with a note of what was left out.
func cutHeadTail(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	marker := func(n int) string { return "\n[… " + strconv.Itoa(n) + " bytes left out …]\n" }
	room := limit - len(marker(len(s)))
	if room < 8 {
		return cutHead(s, limit)
	}
	head, tail := room*2/3, room-room*2/3
	h := s[:runeStart(s, head)]
	t := s[runeEnd(s, len(s)-tail):]
	return h + marker(len(s)-len(h)-len(t)) + t
}

// cutHead keeps the start of s, at most limit bytes, on a rune boundary.
func cutHead(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return s[:runeStart(s, limit)]
}

// runeStart moves i back to the start of the rune it is in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// runeEnd moves i forward to the start of the next rune.
func runeEnd(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// shrinkLimits is one round of structural shrinking.
type shrinkLimits struct {
	items, keys, str, depth int
}

// shrinkRounds get stricter until the document fits.
var shrinkRounds = []shrinkLimits{
	{items: 50, keys: 60, str: 2000, depth: 12},
	{items: 20, keys: 40, str: 600, depth: 8},
	{items: 10, keys: 25, str: 240, depth: 6},
	{items: 5, keys: 15, str: 100, depth: 4},
	{items: 2, keys: 8, str: 48, depth: 3},
	{items: 1, keys: 4, str: 24, depth: 2},
}

// shrinkJSON returns n encoded in at most limit bytes, always valid JSON:
// long arrays keep their first items and the last one with a note of how
// many were left out, objects their first keys, long strings their head
// and tail, deep nesting a one-line description. If nothing fits, a small
// object says what the value was.
func shrinkJSON(n *jnode, limit int) []byte {
	if out := n.marshal(); len(out) <= limit {
		return out
	}
	for _, lim := range shrinkRounds {
		if out := shrinkNode(n, lim, 0).marshal(); len(out) <= limit {
			return out
		}
	}
	out := fmt.Appendf(nil, `{"truncated":true,"bytes":%d}`, len(n.marshal()))
	if len(out) > limit {
		return []byte("null")
	}
	return out
}

// shrinkNode returns a shrunk copy of n; n is not changed.
func shrinkNode(n *jnode, lim shrinkLimits, depth int) *jnode {
	switch n.kind {
	case jString:
		if len(n.text) <= lim.str {
			return n
		}
		return &jnode{kind: jString, text: cutHeadTail(n.text, lim.str)}
	case jArray:
		if depth >= lim.depth {
			return &jnode{kind: jString, text: fmt.Sprintf("[array of %d items left out]", len(n.vals))}
		}
		out := &jnode{kind: jArray}
		keep := len(n.vals)
		if keep > lim.items {
			keep = max(lim.items-1, 0)
		}
		for _, v := range n.vals[:keep] {
			out.vals = append(out.vals, shrinkNode(v, lim, depth+1))
		}
		if keep < len(n.vals) {
			omitted := len(n.vals) - keep - 1
			out.vals = append(out.vals, &jnode{kind: jString, text: fmt.Sprintf("[… %d more items …]", omitted)})
			out.vals = append(out.vals, shrinkNode(n.vals[len(n.vals)-1], lim, depth+1))
		}
		return out
	case jObject:
		if depth >= lim.depth {
			return &jnode{kind: jString, text: fmt.Sprintf("[object with %d fields left out]", len(n.keys))}
		}
		out := &jnode{kind: jObject}
		keep := min(len(n.keys), lim.keys)
		for i := range keep {
			out.keys = append(out.keys, n.keys[i])
			out.vals = append(out.vals, shrinkNode(n.vals[i], lim, depth+1))
		}
		if keep < len(n.keys) {
			out.keys = append(out.keys, "…")
			out.vals = append(out.vals, &jnode{kind: jString, text: fmt.Sprintf("[%d more fields left out]", len(n.keys)-keep)})
		}
		return out
	}
	return n
}
