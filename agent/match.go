package agent

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/hermes-gw/hermes/skills"
)

// Relevance: how well a user's text fits a skill, by words rather than
// exact trigger strings. Employees do not know the trigger words (「实际到账」
// for 「工资」, 「过期」 for 「有效期」), so a skill is matched on everything
// its author wrote: triggers and synonyms, the display name, examples, the
// description and usage notes, and the parameters' names, descriptions and
// enum values.
//
// Chinese has no spaces, and a dictionary segmenter would need a dictionary
// of HR/IT words we would have to keep up to date; overlapping character
// bigrams find the same words without one (「年假余额」 → 年假 假余 余额) and the
// nonsense bigrams between words rarely occur in a skill's text. Single
// characters count too, weakly: 「票」 in 「高铁票」 still points to a skill
// about 「车票」, and the inverse document frequency silences the common
// ones. Latin words
// and abbreviations (VPN, OA, PS) are lower-cased whole words. Each term is
// weighted by how rare it is in the catalog (inverse document frequency,
// scaled to [0,1]) times the weight of the field it was found in; a trigger
// or synonym found whole in the text adds a bonus.

// Field weights: what the author declared as the words of the skill counts
// more than the prose around it.
const (
	weightDeclared    = 3.0  // triggers, synonyms, display name
	weightExample     = 2.0  // example requests
	weightName        = 2.0  // the words of the skill's name (vpn, payslip)
	weightProse       = 1.0  // description, usage notes, parameters
	weightHanChar     = 0.35 // one Han character is a weaker clue than a word
	phraseBonus       = 2.0  // a trigger or synonym occurs whole in the text
	maxDocCacheSkills = 4096
)

// fillerTerms are bigrams of how people ask, not of what they ask about;
// they would match the prose of many skills.
var fillerTerms = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`帮我 我的 一下 什么 怎么 多少 可以 能不 不能 是不 不是 有没 没有 这个 那个
		现在 还有 一个 时候 么时 请问 你好 谢谢 麻烦 需要 想要 我想 我要 为什 为什么 哪个 哪里 一天 提问 问者 本人 使用 员工 时使
		用它 不要 要用 查询 查一 查下 看看 看一 告诉 知道 是否 已经 如何 问题 给我 的话 了吗
		我 的 了 吗 呢 么 个 一 是 有 在 下 不 这 那 你 他 帮 请 能 要 也 就 都 还 和 怎 啊 吧 呀 给 想 看 查 问 者 本 用 时`) {
		fillerTerms[t] = true
	}
}

// matchNorm folds text for matching: NFKC (full-width letters and digits
// become ASCII), lower case.
func matchNorm(s string) string { return strings.ToLower(norm.NFKC.String(s)) }

// terms splits text into matching terms with their weight factor: Han
// bigrams and, weaker, single Han characters, Latin words of two or more
// letters or digits containing a letter. Filler terms are dropped.
func terms(text string) map[string]float64 {
	out := map[string]float64{}
	add := func(t string, w float64) {
		if !fillerTerms[t] && w > out[t] {
			out[t] = w
		}
	}
	var han []rune
	var word []rune
	flushHan := func() {
		for i := range han {
			add(string(han[i]), weightHanChar)
			if i+1 < len(han) {
				add(string(han[i:i+2]), 1)
			}
		}
		han = han[:0]
	}
	flushWord := func() {
		if len(word) >= 2 && strings.IndexFunc(string(word), unicode.IsLetter) >= 0 {
			add(string(word), 1)
		}
		word = word[:0]
	}
	for _, r := range matchNorm(text) {
		switch {
		case unicode.Is(unicode.Han, r):
			flushWord()
			han = append(han, r)
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			flushHan()
			word = append(word, r)
		default:
			flushHan()
			flushWord()
		}
	}
	flushHan()
	flushWord()
	return out
}

// skillDoc is what matching knows of one skill.
type skillDoc struct {
	weights map[string]float64 // term → the best field weight it occurs in
	phrases []string           // triggers and synonyms, normalised, matched whole
	compact []string           // each phrase without its spaces, matched in the text without its spaces
	regexes []string           // trigger expressions
}

// docCache keeps skill documents for the life of the process, keyed by the
// skill's texts: the catalog changes rarely and every turn matches it.
var (
	docCache   sync.Map // string → *skillDoc
	docEntries int
	docMu      sync.Mutex
)

func docFor(spec skills.Spec) *skillDoc {
	key := docKey(spec)
	if v, ok := docCache.Load(key); ok {
		return v.(*skillDoc)
	}
	d := buildDoc(spec)
	docMu.Lock()
	if docEntries++; docEntries > maxDocCacheSkills {
		docCache.Clear()
		docEntries = 1
	}
	docMu.Unlock()
	docCache.Store(key, d)
	return d
}

func docKey(spec skills.Spec) string {
	var b strings.Builder
	writeDocParts(&b, spec)
	return b.String()
}

// docWriter is what a spec's texts are written to: a strings.Builder
// (docKey) or a maphash.Hash (catalogKey).
type docWriter interface {
	Write([]byte) (int, error)
	WriteString(string) (int, error)
	WriteByte(byte) error
}

// writeDocParts writes each text of spec that matching reads, in a fixed
// order, each ended by a 0 byte and each list by a 1: what docKey and
// catalogKey are made of.
// The parameters are written as bytes: every run keys its catalog, and
// making them a string was a copy per skill per run.
func writeDocParts(w docWriter, spec skills.Spec) {
	for _, p := range [...]string{spec.Name, spec.DisplayName, spec.Description} {
		_, _ = w.WriteString(p)
		_ = w.WriteByte(0)
	}
	_, _ = w.Write(spec.Parameters)
	_ = w.WriteByte(0)
	for _, list := range [...][]string{spec.Synonyms, spec.Examples, spec.Triggers.IntentContains, spec.Triggers.IntentRegex} {
		for _, p := range list {
			_, _ = w.WriteString(p)
			_ = w.WriteByte(0)
		}
		_ = w.WriteByte(1) // a synonym and an example weigh differently
	}
}

func buildDoc(spec skills.Spec) *skillDoc {
	d := &skillDoc{weights: map[string]float64{}, regexes: spec.Triggers.IntentRegex}
	field := func(text string, weight float64) {
		for t := range terms(text) {
			d.weights[t] = max(d.weights[t], weight)
		}
	}
	for _, w := range append(append([]string{spec.DisplayName}, spec.Triggers.IntentContains...), spec.Synonyms...) {
		field(w, weightDeclared)
		if p := matchNorm(strings.TrimSpace(w)); p != "" {
			d.phrases, d.compact = append(d.phrases, p), append(d.compact, strings.Join(strings.Fields(p), ""))
		}
	}
	for _, ex := range spec.Examples {
		field(ex, weightExample)
	}
	field(strings.ReplaceAll(spec.Name, "_", " "), weightName)
	field(spec.Description, weightProse)
	field(parameterText(spec.Parameters), weightProse)
	return d
}

// parameterText is the words of a parameter schema: property names (split
// at underscores), descriptions and string enum values.
func parameterText(schema []byte) string {
	root, err := parseJSON(schema)
	if err != nil || root.kind != jObject {
		return ""
	}
	var b strings.Builder
	var walk func(n *jnode)
	walk = func(n *jnode) {
		if n == nil || n.kind != jObject {
			return
		}
		if props := n.get("properties"); props != nil && props.kind == jObject {
			for i, k := range props.keys {
				b.WriteString(strings.ReplaceAll(k, "_", " ") + " ")
				walk(props.vals[i])
			}
		}
		if d := n.get("description"); d != nil && d.kind == jString {
			b.WriteString(d.text + " ")
		}
		if e := n.get("enum"); e != nil && e.kind == jArray {
			for _, v := range e.vals {
				if v.kind == jString {
					b.WriteString(v.text + " ")
				}
			}
		}
		walk(n.get("items"))
	}
	walk(root)
	return b.String()
}

// matcher scores texts against one turn's catalog.
type matcher struct {
	docs       []*skillDoc
	idf        map[string]float64 // term → rarity in [0,1]
	colloquial colloquialTable    // colloquial words expanded in the user's text
	family     []string           // per skill: its name without the last word (hr_leave_apply → hr_leave)
	copyOf     []int              // per skill: the first skill with the same texts under another name, else itself
	// index is the catalog's skill index (skillIndex), made by its first
	// run: every run offered an index reads it twice, and the matcher is
	// the catalog's.
	index struct {
		once   sync.Once
		text   string
		tokens int
	}
}

// skillIndex is skillIndex(specs) and its tokens, made once per matcher:
// specs must be the catalog the matcher was built from.
func (m *matcher) skillIndex(specs []skills.Spec) (text string, tokens int) {
	m.index.once.Do(func() {
		m.index.text = skillIndex(specs)
		m.index.tokens = countTokens(m.index.text)
	})
	return m.index.text, m.index.tokens
}

func newMatcher(specs []skills.Spec, colloquial colloquialTable) *matcher {
	m := &matcher{idf: map[string]float64{}, colloquial: colloquial}
	texts := map[string]int{}
	df := map[string]int{}
	for _, s := range specs {
		d := docFor(s)
		m.docs = append(m.docs, d)
		m.family = append(m.family, familyOf(s.Name))
		key := strings.TrimPrefix(docKey(s), s.Name)
		first, seen := texts[key]
		if !seen {
			first = len(m.copyOf)
			texts[key] = first
		}
		m.copyOf = append(m.copyOf, first)
		for t := range d.weights {
			df[t]++
		}
	}
	n := float64(len(specs))
	for t, k := range df {
		// Scaled so that a term only one skill has weighs 1 whatever the
		// catalog's size, which keeps the thresholds meaningful from 5
		// skills to 500.
		m.idf[t] = math.Log(1+n/float64(k)) / math.Log(1+n)
	}
	return m
}

// familyOf is the family of a skill: its name without the last word,
// which catalogs use for one object's actions (hr_leave_balance,
// hr_leave_apply, hr_leave_cancel). A name of one word is its own family.
func familyOf(name string) string {
	if i := strings.LastIndexAny(name, "_-."); i > 0 {
		return name[:i]
	}
	return name
}

// scoreMemo is a matcher's scores of the texts of one ranking: a ranking
// scores the whole request, each clause with the request as context and
// the previous message, so the same text several times over (seven
// scorings of four texts for 「我还有几天年假？」 after one earlier message).
type scoreMemo struct {
	m    *matcher
	memo map[string][]float64
}

func newScoreMemo(m *matcher) *scoreMemo { return &scoreMemo{m: m, memo: map[string][]float64{}} }

// of is m.score(text), computed once per text; callers must not modify it.
func (s *scoreMemo) of(text string) []float64 {
	if v, ok := s.memo[text]; ok {
		return v
	}
	v := s.m.score(text)
	s.memo[text] = v
	return v
}

// score is how well text fits each skill, in catalog order.
func (m *matcher) score(text string) []float64 {
	q := terms(text)
	folded := matchNorm(text)
	m.colloquial.expand(folded, q)
	compact := strings.Join(strings.Fields(folded), "")
	// Summed in a fixed order: identical skills must score identically,
	// or ties would break by map order from run to run.
	keys := slices.Sorted(maps.Keys(q))
	out := make([]float64, len(m.docs))
	for i, d := range m.docs {
		s := 0.0
		for _, t := range keys {
			if w, ok := d.weights[t]; ok {
				s += m.idf[t] * w * q[t]
			}
		}
		for k, p := range d.phrases {
			if strings.Contains(folded, p) || strings.Contains(compact, d.compact[k]) {
				s += phraseBonus
			}
		}
		for _, expr := range d.regexes {
			if re := compiledRegex(expr); re != nil && re.MatchString(text) {
				s += phraseBonus
			}
		}
		out[i] = s
	}
	return out
}

// clauseSeparators split a request into the parts that may each need a
// skill: 「查下年假，顺便帮我请周五一天」 asks two things.
var clauseSeparators = []string{"，", ",", "。", "；", ";", "！", "!", "？", "?", "\n", "、",
	"顺便", "另外", "还有", "并且", "同时", "然后", "以及", "和"}

// clauses cuts text at the separators; a text without any is one clause.
// One pass: no separator overlaps another, so cutting at each in turn
// would cut at the same places.
func clauses(text string) []string {
	var out []string
	add := func(p string) {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		for _, sep := range clauseSeparators {
			if strings.HasPrefix(text[i:], sep) {
				add(text[start:i])
				i += len(sep) - 1
				start = i + 1
				break
			}
		}
	}
	add(text[start:])
	return out
}
