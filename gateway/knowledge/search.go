package knowledge

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store"
)

type querier = store.Querier

// Caller is who searches: the verified sender (never what the model
// says). Depts are their departments from the directory; nil when the
// lookup failed or the channel has none, and then documents limited to
// departments are not searched.
type Caller struct {
	CorpID string
	UserID string
	ChatID string
	Depts  []string
}

// Passage is a run of adjacent passages of one document that matched.
type Passage struct {
	DocumentID int64
	Title      string
	Version    string
	Effective  time.Time
	Heading    string
	Page       int
	Text       string
	Score      float64
	// Seqs are the passages' positions in their document.
	Seqs []int
}

// Search bounds.
const (
	// candidates is how many passages the lexical ranking hands on to be
	// merged: more than limit, so that a neighbour of a hit can join it.
	candidates = 30
	// relevanceFloor is the share of the best passage's lexical score
	// another must reach to be given. Each passage given is read again
	// at every later step of the run; one scoring under 0.6 of the best
	// shares a common word or two with the question (公司, 申请, 多少)
	// and, over the corpus of testdata/bench, answered no question the
	// passages above it did not: from 0.35 to 0.6, when it was set,
	// recall@5 went from 94.4% to 96.0% (the windows' budget going to the
	// passages that answer) and the token ratio's median from 1.92 to
	// 1.54.
	relevanceFloor = 0.6
)

// visibleSQL is the audience filter, on knowledge_documents d, of the
// caller $1 (corp), $2 (user), $3 (departments), $4 (chat): the rule of
// skills/access.go written in SQL, so that a passage the caller may not
// see is never read out of Postgres. Only versions in force are searched.
const visibleSQL = `d.current AND $1 <> ''
	AND (cardinality(d.corps) = 0 OR $1 = ANY(d.corps))
	AND ((cardinality(d.users) = 0 AND cardinality(d.departments) = 0)
	     OR ($2 <> '' AND $2 = ANY(d.users)) OR d.departments && $3::text[])
	AND (cardinality(d.chats) = 0 OR ($4 <> '' AND $4 = ANY(d.chats)))`

// scored is a passage id with its score.
type scored struct {
	id    int64
	score float64
}

// Search returns at most limit passages of the documents c may see that
// best answer query, best first: lexical (Terms, BM25 over lex's
// Postings), and hybrid with the vectors of sim when it has a query
// embedding. Adjacent matching passages of one document are merged into
// one, so an answer split over two sections comes whole, and each is cut
// to its window around the question's words (windows).
func Search(ctx context.Context, q querier, c Caller, query string, limit int, lex Lexical, sim Similar) ([]Passage, error) {
	if limit <= 0 || strings.TrimSpace(query) == "" {
		return nil, nil
	}
	if lex.Postings == nil {
		lex.Postings = NewPostings()
	}
	idx, err := lex.Postings.get(ctx, q)
	if err != nil {
		return nil, err
	}
	depts := orEmpty(nonEmpty(c.Depts))
	terms := lex.Vocabulary.expand(idx, query, idx.soundAlikes(idx.queryWeights(memory.Terms(query))))
	lexical, err := lexicalHits(ctx, q, c, depts, idx, terms)
	if err != nil {
		return nil, err
	}
	hits := lexical
	if sim.Embedding != nil && sim.Vectors != nil {
		semantic, err := sim.Vectors.nearest(ctx, q, c, depts, sim.Embedding, candidates)
		if err != nil {
			return nil, err
		}
		hits = fuse(lexical, semantic, sim.Min)
	}
	if len(hits) == 0 {
		return nil, nil
	}
	ps, err := passages(ctx, q, c, depts, hits, limit)
	if err != nil {
		return nil, err
	}
	return windows(ps, terms, asksFigure(query)), nil
}

// visibleDocuments are the ids of the documents c may see (visibleSQL).
func visibleDocuments(ctx context.Context, q querier, c Caller, depts []string) (map[int64]bool, error) {
	rows, err := q.Query(ctx, `SELECT d.id FROM knowledge_documents d WHERE `+visibleSQL, c.CorpID, c.UserID, depts, c.ChatID)
	if err != nil {
		return nil, fmt.Errorf("knowledge: visible documents: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("knowledge: visible documents: %w", err)
	}
	out := make(map[int64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// lexicalHits are the candidates best passages by terms among the
// documents c may see, above the relevance floor.
func lexicalHits(ctx context.Context, q querier, c Caller, depts []string, idx *termIndex, terms []weighted) ([]scored, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	visible, err := visibleDocuments(ctx, q, c, depts)
	if err != nil {
		return nil, err
	}
	hits := idx.rank(terms, visible, candidates)
	// A passage scoring far below the best shares only a word or two
	// with the question (多少, 公司, 申请): it would cost the model's
	// input and answer nothing.
	for i, h := range hits {
		if h.score < relevanceFloor*hits[0].score {
			return hits[:i], nil
		}
	}
	return hits, nil
}

// fuse merges the lexical and the semantic rankings by reciprocal rank
// (k 60): a passage both find comes first. One only the vectors find
// joins when its similarity reaches min, relevanceFloor of the best
// one's above min (semantic is best first), and that of the best lexical
// hit when the vectors ranked it: each passage given costs the model's
// input, and one the vectors rank below the passage the words found
// best adds little to it.
func fuse(lexical []scored, semantic []similar, min float64) []scored {
	const k = 60.0
	score := map[int64]float64{}
	for i, h := range lexical {
		score[h.id] += 1 / (k + float64(i+1))
	}
	floor := min
	if len(semantic) > 0 {
		floor = max(min, min+relevanceFloor*(semantic[0].sim-min))
	}
	for _, s := range semantic {
		if len(lexical) > 0 && s.id == lexical[0].id {
			floor = max(floor, s.sim)
		}
	}
	for i, s := range semantic {
		if _, lexicalHit := score[s.id]; (lexicalHit && s.sim >= min) || s.sim >= floor {
			score[s.id] += 1 / (k + float64(i+1))
		}
	}
	out := make([]scored, 0, len(score))
	for id, s := range score {
		out = append(out, scored{id, s})
	}
	slices.SortFunc(out, func(a, b scored) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.id, b.id)) })
	return out
}

// chunkRow is one passage read for the answer.
type chunkRow struct {
	id, doc   int64
	seq, page int
	heading   string
	text      string
	title     string
	version   string
	effective *time.Time
}

// passages reads the hits (and the audience filter again: a hit is only
// an id until then) and merges adjacent ones of one document, keeping
// the best limit groups in the order of their best hit.
func passages(ctx context.Context, q querier, c Caller, depts []string, hits []scored, limit int) ([]Passage, error) {
	ids := make([]int64, len(hits))
	rank := make(map[int64]int, len(hits))
	for i, h := range hits {
		ids[i], rank[h.id] = h.id, i
	}
	rows, err := q.Query(ctx, `SELECT c.id, c.document_id, c.seq, c.page, c.heading, c.text, d.title, d.version, d.effective
		FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
		WHERE c.id = ANY($5) AND `+visibleSQL+`
		ORDER BY c.document_id, c.seq`, c.CorpID, c.UserID, depts, c.ChatID, ids)
	if err != nil {
		return nil, fmt.Errorf("knowledge: search passages: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (chunkRow, error) {
		var x chunkRow
		err := r.Scan(&x.id, &x.doc, &x.seq, &x.page, &x.heading, &x.text, &x.title, &x.version, &x.effective)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge: search passages: %w", err)
	}
	type group struct {
		p    Passage
		best int
	}
	var groups []group
	for i := 0; i < len(list); {
		j := i + 1
		for j < len(list) && list[j].doc == list[i].doc && list[j].seq == list[j-1].seq+1 {
			j++
		}
		run := list[i:j]
		lo, hi := around(run, rank)
		x := run[lo]
		g := group{best: rank[x.id], p: Passage{DocumentID: x.doc, Title: x.title, Version: x.version,
			Heading: x.heading, Page: x.page, Text: x.text, Seqs: []int{x.seq}}}
		if x.effective != nil {
			g.p.Effective = *x.effective
		}
		for k := lo + 1; k < hi; k++ {
			y := run[k]
			g.p.Text += "\n"
			if y.heading != run[k-1].heading && y.heading != "" {
				g.p.Text += marker(sectionOf(y.heading, x.title))
			}
			g.p.Text += y.text
			g.p.Seqs = append(g.p.Seqs, y.seq)
			g.best = min(g.best, rank[y.id])
		}
		g.p.Score = hits[g.best].score
		groups = append(groups, g)
		i = j
	}
	slices.SortFunc(groups, func(a, b group) int { return cmp.Compare(a.best, b.best) })
	out := make([]Passage, 0, min(limit, len(groups)))
	for _, g := range groups[:min(limit, len(groups))] {
		out = append(out, g.p)
	}
	return followLeadIns(ctx, q, c, depts, out)
}

// around is the part run[lo:hi] of a run of adjacent matching passages
// given as one: its best-ranked passage, joined by its better-ranked
// neighbours while they fit in windowRunes together.
func around(run []chunkRow, rank map[int64]int) (lo, hi int) {
	best := 0
	for k, x := range run {
		if rank[x.id] < rank[run[best].id] {
			best = k
		}
	}
	lo, hi = best, best+1
	size := runes(run[best].text)
	for {
		next, prev := hi < len(run), lo > 0
		if next && prev && rank[run[lo-1].id] < rank[run[hi].id] {
			next = false
		}
		switch {
		case next && size+runes(run[hi].text) <= windowRunes:
			size += runes(run[hi].text)
			hi++
		case prev && size+runes(run[lo-1].text) <= windowRunes:
			lo--
			size += runes(run[lo].text)
		default:
			return lo, hi
		}
	}
}

// sectionOf is a heading path without its root when the root is the
// document's title (「星河科技员工休假制度（2026版） > 一、年休假」 of
// 《员工休假制度》 is 「一、年休假」): the title is named already.
func sectionOf(heading, title string) string {
	root, rest, nested := strings.Cut(heading, " > ")
	if title == "" || !strings.Contains(root, title) {
		return heading
	}
	if nested {
		return rest
	}
	return ""
}

// SourceOf names p's document as a citation does: its title, version,
// section (its heading path, less a root repeating the title) and page
// (《差旅报销标准》2025版 · 住宿 · 第 3 页), the page
// written with pageFormat (messages.knowledge.page, %d the page).
func SourceOf(p Passage, pageFormat string) string {
	s := "《" + p.Title + "》"
	if p.Version != "" {
		s += p.Version
	}
	if h := sectionOf(p.Heading, p.Title); h != "" {
		s += " · " + h
	}
	if p.Page > 0 {
		s += " · " + fmt.Sprintf(pageFormat, p.Page)
	}
	return s
}
