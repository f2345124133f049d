package agent

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/skills"
)

// Offering: a model shown fewer, relevant tools picks the right one more
// often, cannot wander into unrelated ones (seed 002 §2.2) and costs less.
// But a skill that is not on offer cannot answer, so offering must never
// hide the skill the user needs: when in doubt, offer more.
//
// Turn.Tools are the skills the user may use (access rules applied by the
// gateway); only they are ever offered. A message that asks for no
// company data (chitchat.go) is offered none, nor the index; one that
// asks how or what is gets the company's document search alone
// (skills.Spec.Documents), never a skill. Otherwise
// each skill is scored against the user's text (match.go; colloquial
// verbs such as 催, 撤, 关 expanded by colloquial.go). Offered in full (its
// definition in the tools block):
//
//  1. skills with Triggers.Always, and skills bound to the chat
//     (Turn.BoundTools);
//  2. the best matches of the text: the best skill of each clause, ranked
//     with the whole request in view, so a two-part request gets both
//     skills; then every skill scoring at least relativeShare of the best
//     score (and minScore), at most maxPerFamily of one family before
//     the others;
//  3. the skills of the previous turn: Turn.RecentTools, and the best
//     matches of the user's previous message, so 「那上个月呢」 keeps the
//     payslip skill on offer;
//
// at most Options.MaxTools of them, in that order of priority. After each
// tool round the rest of the request (the clauses no called skill serves)
// is ranked on its own words, then the whole request again (reoffer), and
// the best skills not on offer yet join, so the step after a look-up has
// its skill too, also when it is another verb on another object.
//
// When the best score is weak (below strongScore), a small catalog (at most
// MaxTools skills) is offered whole. A larger one gets an index in the
// system prompt and the built-in load_skills tool that loads full
// definitions by name or by a search (a skill of the index may also be
// called directly): one line per skill while that costs at most
// Options.IndexTokens, else the index of areas (index.go), whose cost does
// not grow with the catalog. With the index of areas the model no longer
// sees every sibling's name, so offering is wider: each clause's
// runner-up and the best match's siblings join.
//
// Offered skills are listed in the order of Turn.Tools (the registry sorts
// by name), and the index depends on the catalog only, so the same user
// gets a byte-identical system prompt turn after turn.

// Score thresholds, on the scale of match.go: a term only one skill has
// found in its declared words scores 3, in its prose 1.
const (
	minScore      = 0.8 // below this a skill is not a match at all
	strongScore   = 2.4 // the best match is trusted without the whole catalog
	relativeShare = 0.4 // matches this close to the best are offered too
	// maxPrevious caps the previous turn's skills kept on offer.
	maxPrevious = 3
)

// toolEntry is an offered skill with what the run needs of it, built once.
type toolEntry struct {
	tool   skills.Tool
	spec   skills.Spec
	params json.RawMessage      // the parameter schema sent to the model
	schema *jsonschema.Resolved // nil when the schema does not compile: the skill validates anyway
	def    openai.Tool
	// personal: the skill answers with the caller's own records
	// (whose.go); subjectKey is the argument whose data a call is about,
	// which the model fills and Hermes removes ("" when none was added).
	personal   bool
	subjectKey string
}

var regexCache sync.Map // pattern → *regexp.Regexp, nil for an invalid one

func compiledRegex(p string) *regexp.Regexp {
	if v, ok := regexCache.Load(p); ok {
		return v.(*regexp.Regexp)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		re = nil // the skill loader reports it; here it just never matches
	}
	regexCache.Store(p, re)
	return re
}

// offerInput is what offering looks at.
type offerInput struct {
	tools      []skills.Tool
	bound      []string // Turn.BoundTools
	recent     []string // Turn.RecentTools
	text       string   // the user's text, normalised
	previous   string   // the user's previous message, "" when none
	limit      int      // Options.MaxTools
	indexTok   int      // Options.IndexTokens
	colloquial colloquialTable
}

// offering is the outcome: the skills offered in full and which index is
// on.
type offering struct {
	entries  []*toolEntry
	index    bool          // the skill index and load_skills are on
	areas    bool          // the index lists areas, not skills (index.go)
	chitchat bool          // the text asks for no company data: no skill is offered (a question gets the document search)
	specs    []skills.Spec // of the turn's tools, in order
	matcher  *matcher      // over specs
}

// Context weights: a clause is ranked with the whole request in view, and
// a short follow-up with the previous message in view, so 「撤了」 in
// 「看看我的报销记录，把重复的那笔撤了」 finds the 报销 cancellation rather
// than any other.
const (
	clauseContext   = 0.5
	previousContext = 0.5
	perClause       = 2 // skills offered for each clause of a request
	maxPerFamily    = 3 // siblings offered before other families' matches
	// reofferTools bounds the skills a re-ranking after an observation
	// adds, over Options.MaxTools.
	reofferTools = 4
)

// offerTools picks what to offer. Errors: two tools with the same name, or
// a tool with a built-in's name.
func offerTools(in offerInput) (offering, error) {
	specs, pos, err := turnSpecs(in.tools)
	if err != nil {
		return offering{}, err
	}
	m := matcherFor(specs, in.colloquial)
	if v := chitChatOf(in.text, m); v.chat && !(v.stated && in.previous != "" && !chitChat(in.previous, m)) {
		// A question asked for an answer (how to, what is) may be one the
		// company's documents answer: the document search goes with it,
		// never a skill.
		out := offering{chitchat: true, specs: specs, matcher: m}
		for i, s := range specs {
			if v.asks && s.Documents {
				out.entries = append(out.entries, newToolEntry(in.tools[i], s))
			}
		}
		return out, nil
	}
	// A skill index that costs more than indexTok gives way to the index
	// of areas, whose cost does not grow with the catalog; the model then
	// no longer sees every sibling's name, so offering is wider.
	_, indexTokens := m.skillIndex(specs)
	areas := indexTokens > max(in.indexTok, 0)
	var picked []int
	add := func(i int) {
		if !slices.Contains(picked, i) {
			picked = append(picked, i)
		}
	}
	for i, s := range specs {
		if s.Triggers.Always || slices.Contains(in.bound, s.Name) {
			add(i)
		}
	}
	sm := newScoreMemo(m)
	current, best := bestMatches(sm, in.text, in.previous, areas)
	for _, i := range current {
		add(i)
	}
	var previous []int
	for _, name := range in.recent {
		if i, ok := pos[name]; ok {
			previous = append(previous, i)
		}
	}
	if in.previous != "" {
		prev, _ := bestMatches(sm, in.previous, "", false)
		previous = append(previous, prev...)
	}
	for _, i := range previous[:min(len(previous), maxPrevious)] {
		add(i)
	}

	strong := best >= strongScore
	if !strong && len(specs) <= in.limit {
		picked = picked[:0]
		for i := range specs {
			picked = append(picked, i)
		}
	}
	// Matches beyond the cap are doubt too: the one needed may be among them.
	capped := len(picked) > in.limit
	picked = picked[:min(len(picked), in.limit)]
	slices.Sort(picked)
	out := offering{entries: make([]*toolEntry, 0, len(picked)), specs: specs, matcher: m}
	for _, i := range picked {
		out.entries = append(out.entries, newToolEntry(in.tools[i], specs[i]))
	}
	if len(picked) < len(specs) {
		out.areas = areas
		out.index = in.indexTok >= 0 || !strong || capped
	}
	return out, nil
}

// turnSpecs are the specs of the turn's tools and each name's position.
// Errors: two tools with the same name, or one with a built-in's name.
func turnSpecs(tools []skills.Tool) ([]skills.Spec, map[string]int, error) {
	specs := make([]skills.Spec, len(tools))
	pos := map[string]int{}
	for i, t := range tools {
		specs[i] = t.Spec()
		name := specs[i].Name
		if _, dup := pos[name]; dup {
			return nil, nil, fmt.Errorf("two tools named %q", name)
		}
		if isBuiltin(name) {
			return nil, nil, fmt.Errorf("tool name %q is reserved for the agent", name)
		}
		pos[name] = i
	}
	return specs, pos, nil
}

// contextScores are the scores of text, each skill that matches it at all
// raised by weight times its score for context: context ranks the
// matches of text, it never adds a skill text does not match.
func contextScores(sm *scoreMemo, text, context string, weight float64) []float64 {
	scores := slices.Clone(sm.of(text))
	if context == "" {
		return scores
	}
	for i, c := range sm.of(context) {
		if scores[i] > 0 {
			scores[i] += weight * c
		}
	}
	return scores
}

// byScore is the skills' indexes, best score first (catalog order among
// equals).
func byScore(scores []float64) []int {
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	return order
}

// bestMatches ranks the skills for text, with the previous message as
// context: first the best skill of each clause (ranked with the whole
// text in view, so the clause's verb picks the sibling of the object
// named elsewhere), then those within relativeShare of the best score of
// the whole text; each matches at least minScore. wide adds each clause's
// runner-up and the best match's siblings. best is the top score of the
// whole text.
func bestMatches(sm *scoreMemo, text, previous string, wide bool) (ranked []int, best float64) {
	m := sm.m
	scores := contextScores(sm, text, previous, previousContext)
	order := byScore(scores)
	if len(order) == 0 {
		return nil, 0
	}
	best = scores[order[0]]
	if parts := clauses(text); len(parts) > 1 {
		var second []int
		for _, part := range parts {
			raw := sm.of(part)
			s := contextScores(sm, part, text, clauseContext)
			for k, i := range byScore(s)[:min(perClause, len(s))] {
				if raw[i] < minScore || slices.Contains(ranked, i) {
					continue
				}
				if k == 0 {
					ranked = append(ranked, i)
				} else if wide {
					second = append(second, i)
				}
			}
		}
		defer func() { ranked = appendNew(ranked, second...) }()
	}
	// Siblings crowd: one family takes at most maxPerFamily places before
	// the others had theirs. The best match's siblings count as matches
	// whatever their share: near-duplicates differ by the verb, which a
	// user names loosely.
	perFamily := map[string]int{}
	var crowded []int
	for _, i := range order {
		if scores[i] < minScore {
			break
		}
		f := m.family[i]
		if scores[i] < relativeShare*best && (!wide || f != m.family[order[0]]) {
			continue
		}
		// A copy of a skill already ranked (the same texts under another
		// name) tells the model nothing new: it waits with the crowded.
		if perFamily[f]++; perFamily[f] > maxPerFamily || m.copyOf[i] != i && slices.Contains(ranked, m.copyOf[i]) {
			crowded = append(crowded, i)
			continue
		}
		ranked = appendNew(ranked, i)
	}
	ranked = appendNew(ranked, crowded...)
	return ranked, best
}

// appendNew appends the values not in s yet.
func appendNew(s []int, vs ...int) []int {
	for _, v := range vs {
		if !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	return s
}

// catalog is the specs of the turn's tools and their matcher, built once
// per run (offering built it already unless the run was resumed); nil
// when the tools are unusable, which newRun refused already.
func (r *run) catalog() ([]skills.Spec, *matcher) {
	if r.specs == nil {
		specs, _, err := turnSpecs(r.turn.Tools)
		if err != nil {
			return nil, nil
		}
		r.specs = specs
	}
	if r.matcher == nil {
		r.matcher = matcherFor(r.specs, r.colloquial)
	}
	return r.specs, r.matcher
}

// reoffer ranks the request again after a tool round and adds the best
// skills not on offer yet (at most reofferTools over Options.MaxTools in
// all): the step after a look-up often needs a skill the first ranking
// cut (「修好了就帮我评价一下」). What the rest of the request needs comes
// first: the clauses no called skill serves, ranked on their own words
// (restOfRequest), since a different verb on another object
// (「…，然后报销一笔240的餐费」) matches weakly next to the first clause's
// object; then the whole request.
// Skills already offered keep their place, so the tools block only grows.
// Only with the index on: otherwise everything is on offer already, or
// the request asked for no company data.
func (r *run) reoffer() {
	goal := r.goalText()
	if !r.indexOn || goal == "" || len(r.entries) >= r.opts.MaxTools+reofferTools {
		return
	}
	specs, m := r.catalog()
	if m == nil {
		return
	}
	sm := newScoreMemo(m)
	var ranked []int
	called := map[int]bool{}
	for i, s := range specs {
		if r.called[s.Name] {
			called[i] = true
		}
	}
	if rest := restOfRequest(sm, goal, called); rest != "" {
		// The rest on its own words, with each match's siblings: the
		// first clause's object no longer pulls its verbs toward its own
		// family (「查下我的餐补，然后报销一笔餐费」).
		ranked, _ = bestMatches(sm, rest, "", true)
	}
	whole, _ := bestMatches(sm, goal, "", r.areas)
	ranked = appendNew(ranked, whole...)
	var add []*toolEntry
	var names []string
	for _, i := range ranked {
		name := specs[i].Name
		if r.byName[name] != nil || r.withdrawn[name] {
			continue
		}
		if len(r.entries)+len(add) >= r.opts.MaxTools+reofferTools {
			break
		}
		add = append(add, newToolEntry(r.turn.Tools[i], specs[i]))
		names = append(names, name)
	}
	if len(add) > 0 {
		r.install(add)
		r.note("offered after re-ranking the request: %s", strings.Join(names, ", "))
	}
}

// noParameters is the schema of a tool that takes no arguments; models
// expect an object schema even then.
var noParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// newToolEntry builds the tool definition. The description says what the
// schema cannot: when to use the skill, and whether it asks the user first
// or answers later. The arguments are the schema's job alone.
func newToolEntry(t skills.Tool, spec skills.Spec) *toolEntry {
	params := spec.Parameters
	if len(params) == 0 {
		params = noParameters
	}
	e := &toolEntry{tool: t, spec: spec, params: params, personal: isPersonal(spec)}
	e.schema, _ = compiledSchema(params) // the skill's own: the subject argument is removed before validation
	if e.personal {
		e.params, e.subjectKey = withSubject(params)
	}
	desc := strings.TrimSpace(spec.Description)
	if spec.Confirm {
		desc += "\nIt asks the user to confirm before anything happens."
	}
	if spec.Async {
		desc += "\nIt usually runs in the background; the result is sent to the chat later."
	}
	e.def = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
		Name: spec.Name, Description: desc, Parameters: e.params,
	}}
	return e
}

// toolsByName returns the entries of names that are in tools, for resuming
// a task with the tools it was offered.
func toolsByName(tools []skills.Tool, names []string) []*toolEntry {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []*toolEntry
	for _, t := range tools {
		if spec := t.Spec(); want[spec.Name] && !isBuiltin(spec.Name) {
			out = append(out, newToolEntry(t, spec))
			delete(want, spec.Name) // a duplicate name keeps the first
		}
	}
	return out
}

// restServedBy is how many of a clause's best matches, by its own words
// and with the request in view, a called skill may be among for the
// clause to count as served.
const restServedBy = 3

// restOfRequest is the part of text that no skill called so far serves:
// the clauses none of whose best matches was called, joined. "" when the
// request is one clause, nothing was called, or every clause is served.
func restOfRequest(sm *scoreMemo, text string, called map[int]bool) string {
	parts := clauses(text)
	if len(parts) < 2 || len(called) == 0 {
		return ""
	}
	var rest []string
	for _, part := range parts {
		raw := sm.of(part)
		if order := byScore(raw); len(order) == 0 || raw[order[0]] < minScore {
			continue // asks nothing of a skill (「好的话」)
		}
		// A clause that names its own object (its best match is strong on
		// its own words) is served by that object's skills only; the
		// request in view would lend it the first clause's object. An
		// elliptical one (「撤了」) is served by what the request makes of it.
		best := byScore(raw)[:min(restServedBy, len(raw))]
		if raw[best[0]] < strongScore {
			best = append(best, byScore(contextScores(sm, part, text, clauseContext))[:min(restServedBy, len(raw))]...)
		}
		if !slices.ContainsFunc(best, func(i int) bool { return called[i] }) {
			rest = append(rest, part)
		}
	}
	if len(rest) == len(parts) {
		return "" // nothing served yet: the whole request is the rest
	}
	return strings.Join(rest, "，")
}
