package knowledge

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/memory"
)

// Similar is the semantic half of Search.
type Similar struct {
	// Embedding is the query's vector by knowledge.embeddings; nil: the
	// search is lexical only.
	Embedding []float32
	// Min is the cosine similarity a passage found by its meaning only
	// must reach.
	Min float64
	// Vectors are the passages' vectors, ranked in Go.
	Vectors *Vectors
}

// similar is a passage id with its cosine similarity to the query.
type similar struct {
	id  int64
	sim float64
}

// Vectors ranks the passages' embeddings: in Postgres when pgvector is
// there (nearestSQL), else kept in memory and ranked in Go: a search
// reads no vector from Postgres, only a stamp of the table (count,
// largest and sum of ids of embedded passages), and reloads them all when
// it changed (a document added, deleted, vectors filled in); its cost is
// a scan of every vector (README: "Knowledge" for the measured figures).
type Vectors struct {
	mu    sync.Mutex
	stamp [3]int64
	byDoc map[int64][]chunkVec
	// sql is whether pgvector ranks the vectors (EnsurePgvector), nil
	// until known.
	sql *bool
	// Log reports once which path ranks the vectors; nil: nothing.
	Log *slog.Logger
}

// inSQL reports whether pgvector ranks the vectors, finding out at the
// first semantic search (a failed check is tried again at the next).
func (vs *Vectors) inSQL(ctx context.Context, q querier) bool {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.sql != nil {
		return *vs.sql
	}
	ok, err := EnsurePgvector(ctx, q)
	if err != nil {
		if vs.Log != nil {
			vs.Log.Warn("knowledge: pgvector check failed; vectors ranked in Hermes", "err", err)
		}
		return false
	}
	vs.sql = &ok
	if vs.Log != nil {
		vs.Log.Info("knowledge: passages' vectors ranked", "in_postgres_with_pgvector", ok)
	}
	return ok
}

// nearestSQL ranks the visible passages' vectors by cosine distance in
// Postgres with pgvector: embedding stays real[] (the schema does not
// depend on the extension) and is cast to vector, which pgvector defines
// for real[]. It is an exact scan of the visible passages, without an ANN
// index (one needs a fixed dimension: README, "Knowledge", says how to add
// one). Untested on this project's machines, which lack pgvector; the
// fallback (nearest in Go) is what the tests cover.
const nearestSQL = `SELECT c.id, 1 - (c.embedding::vector <=> $5::real[]::vector) AS sim
FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
WHERE c.embedding IS NOT NULL AND cardinality(c.embedding) = cardinality($5::real[]) AND ` + visibleSQL + `
ORDER BY c.embedding::vector <=> $5::real[]::vector, c.id
LIMIT $6`

func nearestInSQL(ctx context.Context, q querier, c Caller, depts []string, query []float32, k int) ([]similar, error) {
	rows, err := q.Query(ctx, nearestSQL, c.CorpID, c.UserID, depts, c.ChatID, query, k)
	if err != nil {
		return nil, fmt.Errorf("knowledge: nearest passages (pgvector): %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (similar, error) {
		var s similar
		err := r.Scan(&s.id, &s.sim)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge: nearest passages (pgvector): %w", err)
	}
	return out, nil
}

type chunkVec struct {
	id   int64
	v    []float32
	norm float64
}

// NewVectors is an empty cache, filled at the first search.
func NewVectors() *Vectors { return &Vectors{} }

// nearest are the k passages of the documents c may see most similar to
// query, most similar first. The documents are chosen by the audience
// filter in SQL; only their vectors are compared.
func (vs *Vectors) nearest(ctx context.Context, q querier, c Caller, depts []string, query []float32, k int) ([]similar, error) {
	if vs.inSQL(ctx, q) {
		return nearestInSQL(ctx, q, c, depts, query, k)
	}
	byDoc, err := vs.load(ctx, q)
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `SELECT d.id FROM knowledge_documents d WHERE `+visibleSQL, c.CorpID, c.UserID, depts, c.ChatID)
	if err != nil {
		return nil, fmt.Errorf("knowledge: visible documents: %w", err)
	}
	docs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("knowledge: visible documents: %w", err)
	}
	qn := norm(query)
	if qn == 0 {
		return nil, nil
	}
	var out []similar
	for _, d := range docs {
		for _, cv := range byDoc[d] {
			if len(cv.v) != len(query) || cv.norm == 0 {
				continue
			}
			out = append(out, similar{cv.id, float64(dot(cv.v, query)) / (qn * cv.norm)})
		}
	}
	slices.SortFunc(out, func(a, b similar) int { return cmp.Or(cmp.Compare(b.sim, a.sim), cmp.Compare(a.id, b.id)) })
	return out[:min(k, len(out))], nil
}

// load returns the cached vectors, reloaded when the table changed.
func (vs *Vectors) load(ctx context.Context, q querier) (map[int64][]chunkVec, error) {
	var stamp [3]int64
	err := q.QueryRow(ctx, `SELECT count(*), coalesce(max(id), 0), coalesce(sum(id), 0)::bigint
		FROM knowledge_chunks WHERE embedding IS NOT NULL`).Scan(&stamp[0], &stamp[1], &stamp[2])
	if err != nil {
		return nil, fmt.Errorf("knowledge: vectors: %w", err)
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.byDoc != nil && stamp == vs.stamp {
		return vs.byDoc, nil
	}
	rows, err := q.Query(ctx, `SELECT id, document_id, embedding FROM knowledge_chunks WHERE embedding IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("knowledge: vectors: %w", err)
	}
	byDoc := map[int64][]chunkVec{}
	for rows.Next() {
		var cv chunkVec
		var doc int64
		if err := rows.Scan(&cv.id, &doc, &cv.v); err != nil {
			rows.Close()
			return nil, fmt.Errorf("knowledge: vectors: %w", err)
		}
		cv.norm = norm(cv.v)
		byDoc[doc] = append(byDoc[doc], cv)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("knowledge: vectors: %w", err)
	}
	vs.byDoc, vs.stamp = byDoc, stamp
	return byDoc, nil
}

// dot is the dot product of two vectors of one length, in float32 with
// four sums: every passage's vector is compared at each hybrid search,
// and this loop was most of its time (20,000 vectors of 1,024).
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

// FillVectors embeds up to batch passages that have no vector yet (added
// while embeddings were off or the endpoint failed), oldest first, and
// returns how many it embedded. It stops at the endpoint's first error,
// keeping those done: the rest are tried at the next fill, and lexical
// search answers meanwhile.
func FillVectors(ctx context.Context, q querier, emb memory.Embedder, batch int) (int, error) {
	rows, err := q.Query(ctx, `SELECT c.id, d.title, c.heading, c.text FROM knowledge_chunks c
		JOIN knowledge_documents d ON d.id = c.document_id
		WHERE c.embedding IS NULL ORDER BY c.id LIMIT $1`, batch)
	if err != nil {
		return 0, fmt.Errorf("knowledge: fill vectors: %w", err)
	}
	type todo struct {
		id   int64
		text string
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (todo, error) {
		var t todo
		var title, heading, text string
		err := r.Scan(&t.id, &title, &heading, &text)
		t.text = title + "\n" + heading + "\n" + text
		return t, err
	})
	if err != nil {
		return 0, fmt.Errorf("knowledge: fill vectors: %w", err)
	}
	done := 0
	for _, t := range list {
		v, err := emb.Embed(ctx, t.text)
		if err != nil {
			return done, fmt.Errorf("knowledge: fill vectors: %w", err)
		}
		if _, err := q.Exec(ctx, `UPDATE knowledge_chunks SET embedding = $2 WHERE id = $1`, t.id, v); err != nil {
			return done, fmt.Errorf("knowledge: fill vectors: %w", err)
		}
		done++
	}
	return done, nil
}

// HasPgvector reports whether the pgvector extension is installed in the
// database.
func HasPgvector(ctx context.Context, q querier) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'vector')`).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("knowledge: pgvector: %w", err)
	}
	return ok, nil
}

// EnsurePgvector reports whether passages' vectors can be ranked in SQL:
// pgvector is installed, or the server offers it (pg_available_extensions)
// and CREATE EXTENSION succeeds (it needs the database owner's rights;
// refused, the answer is false and the error says why). A server without
// it (Debian 12's Postgres) answers false, nil.
func EnsurePgvector(ctx context.Context, q querier) (bool, error) {
	if ok, err := HasPgvector(ctx, q); ok || err != nil {
		return ok, err
	}
	var available bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_available_extensions WHERE name = 'vector')`).Scan(&available)
	if err != nil {
		return false, fmt.Errorf("knowledge: pgvector: %w", err)
	}
	if !available {
		return false, nil
	}
	if _, err := q.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`); err != nil {
		return false, fmt.Errorf("knowledge: pgvector offered but not created: %w", err)
	}
	return true, nil
}
