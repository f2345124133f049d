package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SkillFile is one attachment's URL handed to one skill call.
type SkillFile struct {
	InboundID int64
	Part      int
	Skill     string
	RunID     string
	UserID    string
	ExpiresAt time.Time
}

// InsertSkillFile records the URL whose token hashes to tokenHash.
func InsertSkillFile(ctx context.Context, q Querier, tokenHash []byte, f SkillFile, now time.Time) error {
	if _, err := q.Exec(ctx, `
INSERT INTO skill_files (token_hash, inbound_id, part, skill, run_id, user_id, created_at, expires_at)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8)`,
		tokenHash, f.InboundID, f.Part, f.Skill, f.RunID, f.UserID, now, f.ExpiresAt); err != nil {
		return fmt.Errorf("store: insert skill file: %w", err)
	}
	return nil
}

// OpenedFile is what a file URL serves: the attachment, nil Data once
// purged.
type OpenedFile struct {
	ExpiresAt time.Time
	Name      string
	MIME      string
	Data      []byte
}

// OpenSkillFile counts a fetch of the URL whose token hashes to tokenHash
// and returns its attachment; ErrNotFound when no URL has that token.
func OpenSkillFile(ctx context.Context, q Querier, tokenHash []byte) (OpenedFile, error) {
	var f OpenedFile
	err := q.QueryRow(ctx, `
WITH f AS (
  UPDATE skill_files SET fetches = fetches + 1 WHERE token_hash = $1
  RETURNING inbound_id, part, expires_at
)
SELECT f.expires_at, m.name, m.mime, m.data FROM f JOIN inbound_media m USING (inbound_id, part)`,
		tokenHash).Scan(&f.ExpiresAt, &f.Name, &f.MIME, &f.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return f, ErrNotFound
	}
	if err != nil {
		return f, fmt.Errorf("store: open skill file: %w", err)
	}
	return f, nil
}

// SweepSkillFiles forgets URLs that expired before t.
func SweepSkillFiles(ctx context.Context, q Querier, before time.Time) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM skill_files WHERE expires_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("store: sweep skill files: %w", err)
	}
	return tag.RowsAffected(), nil
}
