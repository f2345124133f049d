package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Context compression (seed 001 §4.2): when the next prompt would pass
// CompressRatio of the model's window, tool observations older than the
// last KeepRecentSteps rounds are replaced by extractive summaries (first
// and last lines, key JSON fields; never a model's paraphrase, which can
// invent facts) that point to the full text, archived through
// Options.Archive: "[archived: REF]". The system prompt, the user's
// request and the recent rounds stay verbatim. This is the only edit to
// past context; it changes the prompt prefix, so it happens rarely and
// all at once rather than one observation per step.

// compress shortens old observations if the prompt is too large.
func (r *run) compress(ctx context.Context) {
	limit := int(float64(r.opts.ContextWindow) * r.opts.CompressRatio)
	before := r.promptTokens()
	if before <= limit || len(r.rounds) <= r.opts.KeepRecentSteps {
		return
	}
	keepFrom := r.rounds[len(r.rounds)-r.opts.KeepRecentSteps]
	// Earlier requests share r.msgs' array; a Model that keeps them must
	// not see their past rewritten.
	r.msgs = slices.Clone(r.msgs)
	var refs []string
	for i := range keepFrom {
		m := &r.meta[i]
		if m.kind != msgObservation || m.archived {
			continue
		}
		text := r.msgs[i].Content
		ref, err := r.archive.Put(ctx, r.archiveRun, text)
		if err != nil {
			// Without an archive the text would be lost: keep it whole.
			r.log.Warn("agent: archive observation", "error", err)
			continue
		}
		summary := summarizeObservation(text, m.tool, ref)
		r.msgs[i].Content = summary
		m.archived, m.tokens = true, countTokens(summary)
		refs = append(refs, ref)
	}
	if len(refs) == 0 {
		return
	}
	if !r.recallOn {
		r.recallOn = true
		r.rebuildDefs()
	}
	after := r.promptTokens()
	r.note("compressed %s (archived: %s); prompt %d → %d tokens", plural(len(refs), "observation"),
		strings.Join(refs, ", "), before, after)
	r.emit(Event{Kind: EventStage, Text: "compress"})
	r.log.Info("agent: context compressed", "observations", len(refs), "tokens_before", before, "tokens_after", after)
}

// summaryLineBytes caps each line quoted in a summary.
const summaryLineBytes = 160

// summarizeObservation is the extractive stand-in for an archived
// observation.
func summarizeObservation(text, tool, ref string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[archived: %s] Shortened result of %s (%d bytes). ", ref, tool, len(text))
	if doc, err := parseJSON([]byte(text)); err == nil && doc.isContainer() {
		b.WriteString("Key fields: " + keyFields(doc, 8))
	} else {
		lines := nonEmptyLines(text)
		switch {
		case len(lines) <= 3:
			b.WriteString("Text: " + strings.Join(capLines(lines), " / "))
		default:
			fmt.Fprintf(&b, "First lines: %s / … %d lines … / last line: %s",
				strings.Join(capLines(lines[:2]), " / "), len(lines)-3, cutHead(lines[len(lines)-1], summaryLineBytes))
		}
	}
	fmt.Fprintf(&b, "\nCall recall_observation with ref %q if you need the full text.", ref)
	return b.String()
}

// keyFields lists the scalar fields of an object (or of an array's first
// item) and the sizes of nested values.
func keyFields(doc *jnode, limit int) string {
	if doc.kind == jArray {
		s := fmt.Sprintf("an array of %d items", len(doc.vals))
		if len(doc.vals) > 0 && doc.vals[0].kind == jObject {
			s += "; the first: " + keyFields(doc.vals[0], limit)
		}
		return s
	}
	var parts []string
	for i, k := range doc.keys {
		if len(parts) == limit {
			parts = append(parts, fmt.Sprintf("… %d more fields", len(doc.keys)-i))
			break
		}
		v := doc.vals[i]
		switch v.kind {
		case jArray:
			parts = append(parts, fmt.Sprintf("%s=[%d items]", k, len(v.vals)))
		case jObject:
			parts = append(parts, fmt.Sprintf("%s={%d fields}", k, len(v.keys)))
		default:
			parts = append(parts, k+"="+cutHead(string(v.marshal()), 80))
		}
	}
	return strings.Join(parts, ", ")
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func capLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = cutHead(l, summaryLineBytes)
	}
	return out
}

// recall answers recall_observation from the archive, cut to the
// observation budget like any result.
func (r *run) recall(ctx context.Context, args json.RawMessage) observation {
	var a struct {
		Ref string `json:"ref"`
	}
	_ = json.Unmarshal(args, &a)
	ref := strings.Trim(strings.TrimSpace(a.Ref), "[]")
	ref = strings.TrimSpace(strings.TrimPrefix(ref, "archived:"))
	text, err := r.archive.Get(ctx, r.archiveRun, ref)
	if err != nil {
		return observation{text: fmt.Sprintf("error: not_found: no archived result %q (%v)\n"+
			"what to change: use a REF exactly as shown in \"[archived: REF]\"", a.Ref, err)}
	}
	if doc, err := parseJSON([]byte(text)); err == nil {
		return observation{text: string(shrinkJSON(doc, r.opts.MaxObservationBytes))}
	}
	return observation{text: cutHeadTail(text, r.opts.MaxObservationBytes)}
}
