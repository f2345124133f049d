package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MediaRow is one attachment of an inbound message once fetched: its
// bytes (decrypted), or why there are none.
type MediaRow struct {
	InboundID int64
	Part      int // index in the message's Parts
	Kind      string
	Name      string
	MIME      string // sniffed from the bytes
	Size      int64
	Data      []byte // nil when the fetch failed or after media.retention
	Error     string // why it could not be fetched or read: shown to nobody but admins
	Became    string // what it became for the model, e.g. "图片 → 视觉模型" (the console shows it)
	FetchedAt time.Time
}

// SaveMedia records a fetched attachment; a part recorded before (another
// attempt of the same message) is kept as it was.
func SaveMedia(ctx context.Context, q Querier, m MediaRow) error {
	if _, err := q.Exec(ctx, `
INSERT INTO inbound_media (inbound_id, part, kind, name, mime, size, data, error, fetched_at)
VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9)
ON CONFLICT (inbound_id, part) DO NOTHING`,
		m.InboundID, m.Part, m.Kind, m.Name, m.MIME, m.Size, m.Data, m.Error, m.FetchedAt); err != nil {
		return fmt.Errorf("store: save media %d/%d: %w", m.InboundID, m.Part, err)
	}
	return nil
}

// MediaOf returns the fetched attachments of an inbound message by part.
func MediaOf(ctx context.Context, q Querier, inboundID int64) (map[int]MediaRow, error) {
	rows, err := q.Query(ctx, `
SELECT inbound_id, part, kind, name, mime, size, data, error, became, fetched_at
FROM inbound_media WHERE inbound_id = $1`, inboundID)
	if err != nil {
		return nil, fmt.Errorf("store: media of %d: %w", inboundID, err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[MediaRow])
	if err != nil {
		return nil, fmt.Errorf("store: media of %d: %w", inboundID, err)
	}
	out := make(map[int]MediaRow, len(list))
	for _, m := range list {
		out[m.Part] = m
	}
	return out, nil
}

// SetMediaBecame records what an attachment became for the model.
func SetMediaBecame(ctx context.Context, q Querier, inboundID int64, part int, became string) error {
	if _, err := q.Exec(ctx, `UPDATE inbound_media SET became = $3 WHERE inbound_id = $1 AND part = $2`,
		inboundID, part, became); err != nil {
		return fmt.Errorf("store: media %d/%d: %w", inboundID, part, err)
	}
	return nil
}

// PurgeMedia forgets the bytes of attachments fetched before t (their
// name, type, size and what they became stay, for the console) and returns
// how many it purged.
func PurgeMedia(ctx context.Context, q Querier, before time.Time) (int64, error) {
	tag, err := q.Exec(ctx, `UPDATE inbound_media SET data = NULL WHERE fetched_at < $1 AND data IS NOT NULL`, before)
	if err != nil {
		return 0, fmt.Errorf("store: purge media: %w", err)
	}
	return tag.RowsAffected(), nil
}

// FetchedParts are the parts of an inbound message whose bytes are held,
// in order (what a skill that takes files may be given).
func FetchedParts(ctx context.Context, q Querier, inboundID int64) ([]int, error) {
	rows, err := q.Query(ctx, `SELECT part FROM inbound_media WHERE inbound_id = $1 AND data IS NOT NULL ORDER BY part`, inboundID)
	if err != nil {
		return nil, fmt.Errorf("store: fetched parts of %d: %w", inboundID, err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("store: fetched parts of %d: %w", inboundID, err)
	}
	return parts, nil
}
