package memory

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/store"
)

// MaxDims bounds an embedding's dimensions: the largest models served
// today have 4096 (Qwen3-Embedding-8B), text-embedding-3-large 3072.
// More is an endpoint answering garbage, not a model.
const MaxDims = 8192

// maxCandidates bounds the embeddings one recall reads: an owner has at
// most memory.max_per_user (1,000) memories, trimmed after each store;
// this is only a ceiling should the table hold more (an operator's
// import), the newest being read.
const maxCandidates = 5000

// Similar is the semantic half of RecallWith.
type Similar struct {
	// Embedding is the query's vector by the same model as the memories'
	// (memory.embeddings); nil: the recall is lexical only, as Recall's.
	Embedding []float32
	// Min is the cosine similarity a memory must reach to be recalled
	// for its meaning (memory.embeddings.min_similarity).
	Min float64
}

// RecallWith is Recall, hybrid when sim has an embedding: the candidates
// are the owner's best limit memories by shared terms (Recall's ranking)
// and their best limit by cosine similarity to sim.Embedding at or above
// sim.Min. Those at or above sim.Min come first, most similar first;
// then the lexical ones below it (or without an embedding: stored before
// embeddings were on, or while the endpoint failed), in lexical order. So
// a memory sharing no term is recalled only when it is similar enough,
// and one sharing a term is never lost to a low similarity, only ranked
// after the similar ones. At most limit are returned, their used_at set
// to now. Memories whose embedding has other dimensions than the query's
// (a previous model's) are ranked lexically only.
func RecallWith(ctx context.Context, q store.Querier, o Owner, query string, limit int, now time.Time, sim Similar) ([]Memory, error) {
	if sim.Embedding == nil {
		return Recall(ctx, q, o, query, limit, now)
	}
	if strings.TrimSpace(query) == "" || limit <= 0 {
		return nil, nil
	}
	if !validVector(sim.Embedding) {
		return nil, fmt.Errorf("memory: recall: query %w: %d dimensions", ErrBadEmbedding, len(sim.Embedding))
	}
	lexical, err := lexicalIDs(ctx, q, o, Terms(query), limit, now)
	if err != nil {
		return nil, err
	}
	vectors, err := ownerEmbeddings(ctx, q, o, now)
	if err != nil {
		return nil, err
	}
	ids := merge(lexical, similarities(sim.Embedding, vectors), sim.Min, limit)
	return markUsed(ctx, q, o, ids, now)
}

// lexicalIDs are the ids of the owner's best limit memories by shared
// terms, best first.
func lexicalIDs(ctx context.Context, q store.Querier, o Owner, terms []string, limit int, now time.Time) ([]int64, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, lexicalSQL, o.CorpID, o.UserID, terms, now, limit)
	if err != nil {
		return nil, fmt.Errorf("memory: recall: %w", err)
	}
	ids, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (int64, error) {
		var id, score int64
		err := row.Scan(&id, &score)
		return id, err
	})
	if err != nil {
		return nil, fmt.Errorf("memory: recall: %w", err)
	}
	return ids, nil
}

// vector is one memory's embedding.
type vector struct {
	id  int64
	vec []float32
}

// ownerEmbeddings are the embeddings of the owner's unexpired memories
// that have one. The owner's index finds the rows; their vectors are a
// few kilobytes each, read in binary and decoded here (decodeReals):
// for 1,000 memories in 1,536 dimensions pgx's generic array decoding
// spent about 30 ms of the gateway's CPU, this about 9. (The wall time
// is mostly Postgres sending them: BenchmarkRecallWith.)
func ownerEmbeddings(ctx context.Context, q store.Querier, o Owner, now time.Time) ([]vector, error) {
	rows, err := q.Query(ctx, `SELECT id, embedding FROM memories
		WHERE corp_id = $1 AND user_id = $2 AND expires_at > $3 AND embedding IS NOT NULL
		ORDER BY created_at DESC LIMIT $4`, o.CorpID, o.UserID, now, maxCandidates)
	if err != nil {
		return nil, fmt.Errorf("memory: recall embeddings: %w", err)
	}
	defer rows.Close()
	// No descriptions: the query failed, and rows.Err says why.
	fds := rows.FieldDescriptions()
	inBinary := len(fds) == 2 && fds[1].Format == pgx.BinaryFormatCode
	var vs []vector
	for rows.Next() {
		var v vector
		if inBinary {
			err = rows.Scan(&v.id, nil)
			if err == nil {
				v.vec, err = decodeReals(rows.RawValues()[1])
			}
		} else { // a connection in the simple protocol: text, pgx decodes it
			err = rows.Scan(&v.id, &v.vec)
		}
		if err != nil {
			return nil, fmt.Errorf("memory: recall embeddings: %w", err)
		}
		vs = append(vs, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: recall embeddings: %w", err)
	}
	return vs, nil
}

// float4OID is real's type oid.
const float4OID = 700

// decodeReals decodes a one-dimensional real[] without NULLs in
// Postgres' binary format (array_send): ndim, has-nulls flag, element
// oid, then per dimension its size and lower bound, then per element its
// length (4) and its big-endian IEEE 754 bits.
func decodeReals(b []byte) ([]float32, error) {
	if len(b) < 12 {
		return nil, fmt.Errorf("embedding of %d bytes", len(b))
	}
	ndim, oid := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[8:])
	if ndim == 0 {
		return []float32{}, nil
	}
	if ndim != 1 || oid != float4OID || len(b) < 20 {
		return nil, fmt.Errorf("embedding of %d dimensions, element oid %d", ndim, oid)
	}
	n := int(binary.BigEndian.Uint32(b[12:]))
	body := b[20:]
	if n < 0 || n > MaxDims || len(body) != 8*n {
		return nil, fmt.Errorf("embedding of %d numbers in %d bytes", n, len(body))
	}
	v := make([]float32, n)
	for i := range v {
		e := body[8*i:]
		if binary.BigEndian.Uint32(e) != 4 { // NULL (-1) or not a real
			return nil, fmt.Errorf("embedding element %d is not a real", i)
		}
		v[i] = math.Float32frombits(binary.BigEndian.Uint32(e[4:]))
	}
	return v, nil
}

// hasEmbeddings reports whether the owner has an unexpired memory with an
// embedding: without one, embedding the query would be a call for
// nothing (most messages are from users with no memories at all).
func hasEmbeddings(ctx context.Context, q store.Querier, o Owner, now time.Time) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM memories
		WHERE corp_id = $1 AND user_id = $2 AND expires_at > $3 AND embedding IS NOT NULL)`,
		o.CorpID, o.UserID, now).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("memory: recall embeddings: %w", err)
	}
	return ok, nil
}

// similarities are the cosine similarities of query to each vector of
// the same dimensions, by id.
func similarities(query []float32, vs []vector) map[int64]float64 {
	qn := length(query)
	out := make(map[int64]float64, len(vs))
	if qn == 0 {
		return out
	}
	for _, v := range vs {
		if len(v.vec) != len(query) {
			continue
		}
		var dot, vn float64
		for i, x := range v.vec {
			dot += float64(x) * float64(query[i])
			vn += float64(x) * float64(x)
		}
		if vn > 0 {
			out[v.id] = dot / (qn * math.Sqrt(vn))
		}
	}
	return out
}

// length is v's Euclidean norm.
func length(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// merge ranks the union of the lexical ids (best first) and the limit
// most similar at or above threshold, as RecallWith says, and keeps
// limit.
func merge(lexical []int64, sims map[int64]float64, threshold float64, limit int) []int64 {
	type similar struct {
		id  int64
		sim float64
	}
	var above []similar
	for id, s := range sims {
		if s >= threshold {
			above = append(above, similar{id, s})
		}
	}
	// The newest first among equals, as the lexical ranking (ids grow
	// with time, refreshed rows aside).
	byScore := func(a, b similar) int { return cmp.Or(cmp.Compare(b.sim, a.sim), cmp.Compare(b.id, a.id)) }
	slices.SortFunc(above, byScore)
	top := above[:min(len(above), limit)]
	chosen := make(map[int64]bool, len(top)+len(lexical))
	for _, s := range top {
		chosen[s.id] = true
	}
	var below []int64
	for _, id := range lexical {
		if chosen[id] {
			continue
		}
		chosen[id] = true
		if s, ok := sims[id]; ok && s >= threshold {
			top = append(top, similar{id, s})
		} else {
			below = append(below, id)
		}
	}
	slices.SortFunc(top, byScore)
	ids := make([]int64, 0, len(top)+len(below))
	for _, s := range top {
		ids = append(ids, s.id)
	}
	ids = append(ids, below...)
	return ids[:min(len(ids), limit)]
}

// markUsed sets used_at of the owner's memories ids to now and returns
// them in the order of ids (those deleted meanwhile left out).
func markUsed(ctx context.Context, q store.Querier, o Owner, ids []int64, now time.Time) ([]Memory, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, `UPDATE memories SET used_at = $4
		WHERE corp_id = $1 AND user_id = $2 AND id = ANY($3)
		RETURNING `+columns, o.CorpID, o.UserID, ids, now)
	if err != nil {
		return nil, fmt.Errorf("memory: recall: %w", err)
	}
	ms, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("memory: recall: %w", err)
	}
	rank := make(map[int64]int, len(ids))
	for i, id := range ids {
		rank[id] = i
	}
	slices.SortFunc(ms, func(a, b Memory) int { return cmp.Compare(rank[a.ID], rank[b.ID]) })
	return ms, nil
}

// validVector: 1 to MaxDims finite numbers.
func validVector(v []float32) bool {
	if len(v) == 0 || len(v) > MaxDims {
		return false
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}
