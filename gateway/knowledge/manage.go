package knowledge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway"
)

// BaseOf is the knowledge base of a gateway's services: the feature's,
// and the console's (gateway/admin).
func BaseOf(s gateway.Services) *Base {
	b := NewBase(s.Pool, s.Config.Knowledge, s.Log, s.Now)
	b.MaxBytes = s.Config.Media.MaxBytes
	return b
}

// MaxUpload is the largest document accepted (media.max_bytes).
func (b *Base) MaxUpload() int64 { return b.maxBytes() }

// List is every stored document (List).
func (b *Base) List(ctx context.Context) ([]Document, error) { return List(ctx, b.Pool) }

// Delete deletes document id with its passages and vectors (Delete).
func (b *Base) Delete(ctx context.Context, id int64) (Document, error) {
	return Delete(ctx, b.Pool, id)
}

// Gaps are the unanswered questions since since, most asked first (Gaps).
func (b *Base) Gaps(ctx context.Context, since time.Time, limit int) ([]Gap, error) {
	return Gaps(ctx, b.Pool, since, limit)
}

// NeverCited are the documents in force no answer cited (NeverCited).
func (b *Base) NeverCited(ctx context.Context) ([]Document, error) { return NeverCited(ctx, b.Pool) }

// Reindex computes document id's passages' lexical terms again and drops
// their vectors, to be embedded again (now, when embeddings are on): what
// a change of the term extraction or of the embeddings model needs. The
// passages themselves stay (the document's bytes are not kept; a folder
// file is cut again when it changes). It returns how many passages.
//
// Errors: ErrNotFound, a database error.
func (b *Base) Reindex(ctx context.Context, id int64) (int, error) {
	tx, err := b.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("knowledge: reindex: %w", err)
	}
	defer tx.Rollback(ctx)
	var title string
	if err := tx.QueryRow(ctx, `SELECT title FROM knowledge_documents WHERE id = $1 FOR UPDATE`, id).Scan(&title); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, fmt.Errorf("%w: %d", ErrNotFound, id)
		}
		return 0, fmt.Errorf("knowledge: reindex: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT id, heading, page, text FROM knowledge_chunks WHERE document_id = $1 ORDER BY seq`, id)
	if err != nil {
		return 0, fmt.Errorf("knowledge: reindex: %w", err)
	}
	type passage struct {
		id int64
		c  Chunk
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (passage, error) {
		var p passage
		err := r.Scan(&p.id, &p.c.Heading, &p.c.Page, &p.c.Text)
		return p, err
	})
	if err != nil {
		return 0, fmt.Errorf("knowledge: reindex: %w", err)
	}
	batch := &pgx.Batch{}
	for _, p := range list {
		terms := chunkTerms(title, p.c)
		batch.Queue(`UPDATE knowledge_chunks SET terms = $2, nterms = $3, embedding = NULL WHERE id = $1`, p.id, terms, len(terms))
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return 0, fmt.Errorf("knowledge: reindex: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("knowledge: reindex: %w", err)
	}
	b.Fill(ctx)
	return len(list), nil
}
