package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Archive keeps the full text of observations the agent compressed out of
// its context, so the model can fetch them again by reference.
type Archive struct {
	Pool *pgxpool.Pool
}

// Put stores text for a run and returns its reference (a content hash, so
// archiving the same text twice is one row).
func (a Archive) Put(ctx context.Context, runID, text string) (string, error) {
	sum := sha256.Sum256([]byte(text))
	ref := "obs-" + hex.EncodeToString(sum[:6])
	_, err := a.Pool.Exec(ctx, `
INSERT INTO observation_archive (run_id, ref, content) VALUES ($1, $2, $3)
ON CONFLICT (run_id, ref) DO NOTHING`, runID, ref, text)
	if err != nil {
		return "", fmt.Errorf("store: archive observation: %w", err)
	}
	return ref, nil
}

// Get returns an archived text of the same run. It returns ErrNotFound for
// a reference of another run: a model cannot read across runs.
func (a Archive) Get(ctx context.Context, runID, ref string) (string, error) {
	var text string
	err := a.Pool.QueryRow(ctx, `SELECT content FROM observation_archive WHERE run_id = $1 AND ref = $2`, runID, ref).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("observation %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: recall observation: %w", err)
	}
	return text, nil
}
