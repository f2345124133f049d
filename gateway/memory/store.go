package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/store"
)

// Kind is what a memory is.
type Kind string

const (
	KindFact    Kind = "fact"    // a fact the user stated about themselves
	KindOutcome Kind = "outcome" // the outcome of a write the user confirmed
	// KindPreference is how the user wants to be answered (language,
	// length, how to be addressed): it goes with every later message, not
	// only those it bears on by its words.
	KindPreference Kind = "preference"
)

// Owner is whose memories they are: one user of one corp, from the verified identity.
type Owner struct{ CorpID, UserID string }

// Memory is one note kept for an owner.
type Memory struct {
	ID        int64
	Owner     Owner
	Kind      Kind
	Text      string
	Source    string // where it came from: "inbound:42", "run:<id>"
	CreatedAt time.Time
	UsedAt    *time.Time // last recalled; nil until then
	ExpiresAt time.Time
	// Embedding is the text's vector by memory.embeddings, given to Add
	// (nil: none, recalled by its terms only). List and Recall do not read
	// it back: it is kilobytes that only RecallWith's ranking needs.
	Embedding []float32
}

// MaxTextBytes bounds one memory's text: a note, not a document (about
// 100 Chinese characters), so that a handful of recalled ones fit any
// prompt.
const MaxTextBytes = 300

// Errors of Add, before anything is stored.
var (
	ErrTooLong = fmt.Errorf("memory: text over %d bytes", MaxTextBytes)
	ErrEmpty   = errors.New("memory: empty text")
	ErrBadKind = errors.New("memory: kind is not fact, outcome or preference")
	// ErrNoOwner: a memory must name its user, or it would be everyone's
	// whose id is missing. An empty corp id is a corp of its own (an API
	// key configured without one).
	ErrNoOwner = errors.New("memory: owner without a user id")
	// ErrBadTimes: created_at missing, or expires_at not after it.
	ErrBadTimes = errors.New("memory: created_at missing or expires_at not after it")
	// ErrBadEmbedding: no dimensions, over MaxDims, or numbers not finite
	// (its text unprefixed: Add, RecallWith and Embed each say whose).
	ErrBadEmbedding = fmt.Errorf("embedding of no dimensions, over %d or not finite", MaxDims)
)

// columns are a memory's columns in the order scan reads them.
const columns = `id, corp_id, user_id, kind, text, source, created_at, used_at, expires_at`

// Add stores m (terms computed from m.Text); the same text for the same owner again
// refreshes created_at/expires_at/kind/source of the existing row and returns its id (no second row),
// and its embedding when m has one (the same text has the same; a failed call keeps the old one).
// The text is stored without surrounding white space, so that a note
// repeated with a trailing newline is the same note.
func Add(ctx context.Context, q store.Querier, m Memory) (int64, error) {
	m.Text = strings.TrimSpace(m.Text)
	if err := validate(m); err != nil {
		return 0, err
	}
	var id int64
	err := q.QueryRow(ctx, `
		INSERT INTO memories (corp_id, user_id, kind, text, terms, source, created_at, expires_at, embedding)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (corp_id, user_id, text) DO UPDATE
		SET kind = excluded.kind, terms = excluded.terms, source = excluded.source,
		    created_at = excluded.created_at, expires_at = excluded.expires_at,
		    embedding = coalesce(excluded.embedding, memories.embedding)
		RETURNING id`,
		m.Owner.CorpID, m.Owner.UserID, string(m.Kind), m.Text, Terms(m.Text), m.Source, m.CreatedAt, m.ExpiresAt,
		m.Embedding,
	).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("memory: add: %w", err)
	}
	return id, nil
}

// validate checks a memory Add is given (its text trimmed).
func validate(m Memory) error {
	switch {
	case m.Owner.UserID == "":
		return ErrNoOwner
	case m.Kind != KindFact && m.Kind != KindOutcome && m.Kind != KindPreference:
		return fmt.Errorf("%w: %q", ErrBadKind, m.Kind)
	case m.Text == "":
		return ErrEmpty
	case len(m.Text) > MaxTextBytes:
		return fmt.Errorf("%w: %d bytes", ErrTooLong, len(m.Text))
	case !utf8.ValidString(m.Text):
		return errors.New("memory: text is not valid UTF-8")
	case m.CreatedAt.IsZero() || !m.ExpiresAt.After(m.CreatedAt):
		return ErrBadTimes
	case m.Embedding != nil && !validVector(m.Embedding):
		return fmt.Errorf("memory: %w: %d dimensions", ErrBadEmbedding, len(m.Embedding))
	}
	return nil
}

// List returns the owner's unexpired memories at now, oldest first (the numbers /memory shows are positions in this list, 1-based).
// At the zero time it returns every memory still stored, expired ones
// not yet purged included (what a data request is owed).
func List(ctx context.Context, q store.Querier, o Owner, now time.Time) ([]Memory, error) {
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM memories
		WHERE corp_id = $1 AND user_id = $2 AND expires_at > $3
		ORDER BY created_at, id`, o.CorpID, o.UserID, now)
	if err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	ms, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	return ms, nil
}

// Delete removes the owner's memories with these ids (ids of another owner are untouched) and returns how many.
func Delete(ctx context.Context, q store.Querier, o Owner, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := q.Exec(ctx, `DELETE FROM memories WHERE corp_id = $1 AND user_id = $2 AND id = ANY($3)`,
		o.CorpID, o.UserID, ids)
	if err != nil {
		return 0, fmt.Errorf("memory: delete: %w", err)
	}
	return tag.RowsAffected(), nil
}

// DeleteAll removes every memory of the owner.
func DeleteAll(ctx context.Context, q store.Querier, o Owner) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM memories WHERE corp_id = $1 AND user_id = $2`, o.CorpID, o.UserID)
	if err != nil {
		return 0, fmt.Errorf("memory: delete all: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Preferences are the owner's unexpired preferences at now, newest first:
// the newer of two that disagree is read first.
func Preferences(ctx context.Context, q store.Querier, o Owner, now time.Time) ([]Memory, error) {
	rows, err := q.Query(ctx, preferencesSQL, o.CorpID, o.UserID, now)
	if err != nil {
		return nil, fmt.Errorf("memory: preferences: %w", err)
	}
	return collectPreferences(rows)
}

const preferencesSQL = `SELECT ` + columns + ` FROM memories
		WHERE corp_id = $1 AND user_id = $2 AND kind = 'preference' AND expires_at > $3
		ORDER BY created_at DESC, id DESC`

func collectPreferences(rows pgx.Rows) ([]Memory, error) {
	ms, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, fmt.Errorf("memory: preferences: %w", err)
	}
	return ms, nil
}

// PreferencesAndRecall is Preferences and Recall in one round trip and
// one transaction (issue 39: they were two per answered message).
func PreferencesAndRecall(ctx context.Context, pool *pgxpool.Pool, o Owner, query string, limit int, now time.Time) (prefs, found []Memory, err error) {
	terms := Terms(query)
	var b pgx.Batch
	b.Queue(preferencesSQL, o.CorpID, o.UserID, now)
	recall := len(terms) > 0 && limit > 0
	if recall {
		b.Queue(recallSQL, o.CorpID, o.UserID, terms, now, limit)
	}
	br := pool.SendBatch(ctx, &b)
	defer br.Close() //nolint:errcheck // the errors are the queries'
	rows, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("memory: preferences: %w", err)
	}
	if prefs, err = collectPreferences(rows); err != nil || !recall {
		return prefs, nil, err
	}
	if rows, err = br.Query(); err != nil {
		return prefs, nil, fmt.Errorf("memory: recall: %w", err)
	}
	found, err = collectRecall(rows)
	return prefs, found, err
}

// Forget deletes the owner's memories with these ids (ids of another
// owner are untouched), and every copy of their texts in what is stored
// about the owner (store.ScrubText: the message that asked to remember
// one, the conversation, traces, replies such as a /memory list), in q:
// forgetting is not only leaving the prompt. It returns how many memories
// were deleted. ids nil forgets them all, expired ones not yet purged
// included.
func Forget(ctx context.Context, q store.Querier, o Owner, ids []int64) (int64, error) {
	if ids != nil && len(ids) == 0 {
		return 0, nil
	}
	rows, err := q.Query(ctx, `DELETE FROM memories WHERE corp_id = $1 AND user_id = $2 AND ($3::bigint[] IS NULL OR id = ANY($3))
RETURNING text`, o.CorpID, o.UserID, ids)
	if err != nil {
		return 0, fmt.Errorf("memory: forget: %w", err)
	}
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("memory: forget: %w", err)
	}
	if _, err := store.ScrubText(ctx, q, store.Person{CorpID: o.CorpID, UserID: o.UserID}, texts); err != nil {
		return 0, err
	}
	return int64(len(texts)), nil
}

// lexicalSQL is the ranking of recallSQL (below) alone: ids and scores,
// best first, for RecallWith to merge with the embeddings'.
const lexicalSQL = `
		SELECT id, (SELECT count(*) FROM unnest(terms) AS t WHERE t = ANY($3)) AS score
		FROM memories
		WHERE corp_id = $1 AND user_id = $2 AND expires_at > $4
		  AND memory_owner_terms(corp_id, user_id, terms) && memory_owner_terms($1, $2, $3)
		ORDER BY score DESC, created_at DESC, id DESC
		LIMIT $5`

// recallSQL picks the owner's unexpired memories sharing a term with the
// query ($3), scores each by the number of terms shared, keeps the best
// $5 (more recent first among equals) and marks them used, in one
// statement. The overlap is written on memory_owner_terms, the GIN
// index's expression (see the migration), so that the index reads the
// owner's rows having a query term and nobody else's. The terms of a row
// are distinct (Terms), so counting its terms found in the query is the
// size of the intersection.
const recallSQL = `
	WITH hits AS (` + lexicalSQL + `)
	UPDATE memories AS m SET used_at = $4
	FROM hits WHERE m.id = hits.id
	RETURNING hits.score, m.id, m.corp_id, m.user_id, m.kind, m.text, m.source, m.created_at, m.used_at, m.expires_at`

// Recall returns at most limit unexpired memories of the owner most relevant to query, best first,
// and sets their used_at to now. Relevance is lexical (Terms overlap, ties broken by the most
// recently created); a memory sharing no term is not returned. An empty query returns none.
func Recall(ctx context.Context, q store.Querier, o Owner, query string, limit int, now time.Time) ([]Memory, error) {
	terms := Terms(query)
	if len(terms) == 0 || limit <= 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, recallSQL, o.CorpID, o.UserID, terms, now, limit)
	if err != nil {
		return nil, fmt.Errorf("memory: recall: %w", err)
	}
	return collectRecall(rows)
}

// collectRecall reads recallSQL's rows, best first.
func collectRecall(rows pgx.Rows) ([]Memory, error) {
	type hit struct {
		score int64
		Memory
	}
	hits, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (hit, error) {
		var h hit
		err := row.Scan(append([]any{&h.score}, fields(&h.Memory)...)...)
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("memory: recall: %w", err)
	}
	// UPDATE ... RETURNING keeps no order: sort as the SELECT did.
	slices.SortFunc(hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(b.score, a.score), b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	ms := make([]Memory, len(hits))
	for i, h := range hits {
		ms[i] = h.Memory
	}
	return ms, nil
}

// Purge deletes memories expired at now and returns how many (the leader runs it periodically).
func Purge(ctx context.Context, q store.Querier, now time.Time) (int64, error) {
	tag, err := q.Exec(ctx, `DELETE FROM memories WHERE expires_at <= $1`, now)
	if err != nil {
		return 0, fmt.Errorf("memory: purge: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Audit records an admin's action on an owner's memories.
func Audit(ctx context.Context, q store.Querier, admin, action string, o Owner, count int, now time.Time) error {
	_, err := q.Exec(ctx, `INSERT INTO memory_audit (at, admin, action, corp_id, user_id, count) VALUES ($1, $2, $3, $4, $5, $6)`,
		now, admin, action, o.CorpID, o.UserID, count)
	if err != nil {
		return fmt.Errorf("memory: audit: %w", err)
	}
	return nil
}

// AuditEntry is one memory_audit row.
type AuditEntry struct {
	Admin, Action string
	Owner         Owner
	Count         int
	At            time.Time
}

// AuditLog returns the audit rows, oldest first: who looked at, exported
// or deleted whose memories.
func AuditLog(ctx context.Context, q store.Querier) ([]AuditEntry, error) {
	rows, err := q.Query(ctx, `SELECT admin, action, corp_id, user_id, count, at FROM memory_audit ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("memory: audit log: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := row.Scan(&e.Admin, &e.Action, &e.Owner.CorpID, &e.Owner.UserID, &e.Count, &e.At)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("memory: audit log: %w", err)
	}
	return out, nil
}

// scan reads a row of columns.
func scan(row pgx.CollectableRow) (Memory, error) {
	var m Memory
	err := row.Scan(fields(&m)...)
	return m, err
}

// fields are the scan targets of columns.
func fields(m *Memory) []any {
	return []any{&m.ID, &m.Owner.CorpID, &m.Owner.UserID, &m.Kind, &m.Text, &m.Source, &m.CreatedAt, &m.UsedAt, &m.ExpiresAt}
}

// Exported is a memory in a data export (`hermes memory export`, the
// console's, `hermes privacy export`): what the user is owed, without the
// internal id and the owner (the request's subject).
type Exported struct {
	Kind      Kind       `json:"kind"`
	Text      string     `json:"text"`
	Source    string     `json:"source"`
	CreatedAt time.Time  `json:"created_at"`
	UsedAt    *time.Time `json:"used_at"`
	ExpiresAt time.Time  `json:"expires_at"`
}

// Export is every memory of o still stored, expired ones not yet purged
// included (a data request covers what is held), oldest first.
func Export(ctx context.Context, q store.Querier, o Owner) ([]Exported, error) {
	ms, err := List(ctx, q, o, time.Time{})
	if err != nil {
		return nil, err
	}
	out := make([]Exported, len(ms))
	for i, m := range ms {
		out[i] = Exported{Kind: m.Kind, Text: m.Text, Source: m.Source, CreatedAt: m.CreatedAt, UsedAt: m.UsedAt, ExpiresAt: m.ExpiresAt}
	}
	return out, nil
}
