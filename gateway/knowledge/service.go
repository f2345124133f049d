package knowledge

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/media/document"
	"github.com/hermes-gw/hermes/gateway/memory"
)

// fillBatch is how many passages one fill embeds: one embeddings call
// each, so a document's passages are embedded as it is added and a
// backlog is worked off in steps.
const fillBatch = 500

// Base is the knowledge base of one deployment: its store, its
// configuration and its embeddings endpoint. The CLI uses it directly;
// the gateway feature (Service) wraps one.
type Base struct {
	Pool *pgxpool.Pool
	Cfg  config.KnowledgeConfig
	Log  *slog.Logger
	Now  func() time.Time
	// MaxBytes is the largest folder file read (media.max_bytes); 0:
	// document.DefaultMaxUncompressed.
	MaxBytes int64
	// Embedder is knowledge.embeddings' endpoint, nil when off.
	Embedder memory.Embedder
	vectors  *Vectors
	lexical  Lexical
}

// NewBase is the knowledge base of cfg on pool.
func NewBase(pool *pgxpool.Pool, cfg config.KnowledgeConfig, log *slog.Logger, now func() time.Time) *Base {
	vs := NewVectors()
	vs.Log = log
	return &Base{Pool: pool, Cfg: cfg, Log: log, Now: now, Embedder: memory.NewEmbedder(cfg.Embeddings), vectors: vs,
		lexical: Lexical{Postings: NewPostings(), Vocabulary: NewVocabulary(cfg.Vocabulary)}}
}

func (b *Base) maxBytes() int64 {
	if b.MaxBytes > 0 {
		return b.MaxBytes
	}
	return document.DefaultMaxUncompressed // media's cap on inflated bytes
}

// Add adds n (Add), its audience defaulting to everyone of
// knowledge.corps, then embeds its passages when embeddings are on. An
// embeddings failure loses nothing: it is logged, the passages are
// searched lexically, and their vectors are filled in later (Fill).
func (b *Base) Add(ctx context.Context, n NewDocument) (Added, error) {
	if len(n.Audience.Corps) == 0 {
		n.Audience.Corps = b.Cfg.Corps
	}
	a, err := Add(ctx, b.Pool, n, b.Now())
	if err != nil || a.Unchanged {
		return a, err
	}
	b.Fill(ctx)
	return a, nil
}

// Fill embeds passages without a vector, when embeddings are on; a
// failure is logged and left for the next fill.
func (b *Base) Fill(ctx context.Context) {
	if b.Embedder == nil {
		return
	}
	for {
		n, err := FillVectors(ctx, b.Pool, b.Embedder, fillBatch)
		if err != nil {
			b.Log.Warn("knowledge: passages left without vectors; searched lexically until filled", "err", err)
			return
		}
		if n < fillBatch {
			return
		}
	}
}

// Search is Search for c with knowledge.results passages, hybrid when
// embeddings are on; when the endpoint fails the search is lexical
// (logged).
func (b *Base) Search(ctx context.Context, c Caller, query string) ([]Passage, error) {
	sim := Similar{Min: b.Cfg.Embeddings.MinSimilarity, Vectors: b.vectors}
	if b.Embedder != nil {
		v, err := b.Embedder.Embed(ctx, query)
		if err != nil {
			b.Log.Warn("knowledge: query not embedded; searching lexically", "err", err)
		} else {
			sim.Embedding = v
		}
	}
	ps, err := Search(ctx, b.Pool, c, query, b.Cfg.Results, b.lexical, sim)
	if err != nil {
		return nil, fmt.Errorf("knowledge: search: %w", err)
	}
	return ps, nil
}
