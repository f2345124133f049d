package knowledge

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Lexical is the lexical half of Search: what it keeps between
// searches.
type Lexical struct {
	// Postings are the passages' terms, inverted; nil: loaded afresh for
	// this search (correct, and slow over a large index).
	Postings *Postings
	// Vocabulary adds the documents' words for a question's colloquial
	// ones; nil: none added.
	Vocabulary *Vocabulary
}

// Postings are the terms of the passages in force, inverted (for each
// term, the passages holding it), kept in each replica's memory and
// ranked in Go, like Vectors. Asking Postgres' GIN index instead cost a
// heap read per passage holding a query term: a question of common words
// (公司, 申请, 会议室) read thousands and its p95 over 20,000 passages was
// 52-60 ms; here a search reads only the documents the caller may see
// (the audience filter, in SQL), and the passages' text is read later by
// a query that applies the filter again (passages). Memory: about 6 bytes
// per term of each passage (8.5 MB for 19,419 passages of 76 terms;
// README: "How well it answers").
//
// Each search compares a stamp of the documents' table (count, largest
// and sum of ids, sum of the ids in force: one small scan) with the one
// they were loaded at, and loads them again when this replica or another
// added, deleted or superseded a document; passages never change once
// stored, so the stamp is enough.
type Postings struct {
	mu    sync.Mutex
	stamp [4]int64
	idx   *termIndex
}

// NewPostings is an empty index, loaded at the first search.
func NewPostings() *Postings { return &Postings{} }

// termIndex is the inverted index of one stamp.
type termIndex struct {
	ids      []int64 // passages, by id
	docs     []int64 // their documents
	nterms   []int32 // their term counts
	avgTerms float64
	postings map[string][]int32  // term → positions in ids, ascending
	sounds   map[string][]string // a Han bigram's toneless pinyin → the bigrams of postings (typos.go)
}

// idf is BM25's weight of a term; a term no passage holds weighs as one
// held by one.
func (x *termIndex) idf(term string) float64 {
	df := float64(max(len(x.postings[term]), 1))
	n := float64(max(len(x.ids), 1))
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// get returns the index of the passages in force now, loaded again when
// the documents changed since the last load.
func (p *Postings) get(ctx context.Context, q querier) (*termIndex, error) {
	var stamp [4]int64
	err := q.QueryRow(ctx, `SELECT count(*), coalesce(max(id), 0), coalesce(sum(id), 0)::bigint,
		coalesce(sum(id) FILTER (WHERE current), 0)::bigint FROM knowledge_documents`).Scan(&stamp[0], &stamp[1], &stamp[2], &stamp[3])
	if err != nil {
		return nil, fmt.Errorf("knowledge: term index: %w", err)
	}
	// Held while loading: searches that find the same change wait for one
	// load rather than each making its own.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idx != nil && stamp == p.stamp {
		return p.idx, nil
	}
	x, err := loadIndex(ctx, q)
	if err != nil {
		return nil, err
	}
	// A document changed during the load is caught by the next search:
	// its stamp differs from this one.
	p.idx, p.stamp = x, stamp
	return x, nil
}

// loadIndex reads the passages in force with their terms and inverts
// them (in Go: grouping 1.5 million terms in Postgres took longer).
func loadIndex(ctx context.Context, q querier) (*termIndex, error) {
	rows, err := q.Query(ctx, `SELECT c.id, c.document_id, c.terms FROM knowledge_chunks c
		JOIN knowledge_documents d ON d.id = c.document_id WHERE d.current ORDER BY c.id`)
	if err != nil {
		return nil, fmt.Errorf("knowledge: term index: %w", err)
	}
	x := &termIndex{postings: map[string][]int32{}}
	var sum int
	var id, doc int64
	var terms []string
	_, err = pgx.ForEachRow(rows, []any{&id, &doc, &terms}, func() error {
		i := int32(len(x.ids))
		x.ids, x.docs, x.nterms = append(x.ids, id), append(x.docs, doc), append(x.nterms, int32(len(terms)))
		sum += len(terms)
		for _, t := range terms {
			x.postings[t] = append(x.postings[t], i)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge: term index: %w", err)
	}
	x.avgTerms = float64(sum) / float64(max(len(x.ids), 1))
	x.indexSounds()
	return x, nil
}

// weighted is a query term with its weight (idf, times vocabularyFactor
// for a term the question did not write).
type weighted struct {
	term   string
	weight float64
}

// queryWeights weighs terms by their idf in x.
func (x *termIndex) queryWeights(terms []string) []weighted {
	out := make([]weighted, 0, len(terms))
	for _, t := range terms {
		out = append(out, weighted{t, x.idf(t)})
	}
	return out
}

// rank scores the passages of the documents visible holding any of
// terms by BM25 with every term once (k1 1.2, b 0.75: a long passage's
// score is damped) and returns the best k, best first.
func (x *termIndex) rank(terms []weighted, visible map[int64]bool, k int) []scored {
	score := map[int32]float64{}
	for _, t := range terms {
		for _, i := range x.postings[t.term] {
			if visible[x.docs[i]] {
				score[i] += t.weight
			}
		}
	}
	out := make([]scored, 0, len(score))
	for i, s := range score {
		norm := 1 + 1.2*(0.25+0.75*float64(x.nterms[i])/max(x.avgTerms, 1))
		out = append(out, scored{x.ids[i], s * 2.2 / norm})
	}
	slices.SortFunc(out, func(a, b scored) int { return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.id, b.id)) })
	return out[:min(k, len(out))]
}
