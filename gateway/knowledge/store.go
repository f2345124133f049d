package knowledge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/gateway/media/document"
	"github.com/hermes-gw/hermes/gateway/memory"
)

// Bounds of a document. Extraction runs under media's caps (inflated
// bytes, zip entries, parse time: document.Limits' defaults); only the
// output budget is larger than a chat attachment's, since a handbook is
// read whole once rather than pasted into one prompt.
const (
	// MaxChars is the text kept of one document: about 600 pages of a
	// Chinese handbook. A longer one is refused, not cut: an index that
	// silently lacks a document's end answers 「没有」 where the document
	// says otherwise.
	MaxChars = 1_000_000
	// maxChunkTerms bounds one passage's indexed terms (its heading's and
	// title's included): a passage is at most stepsMaxRunes long.
	maxChunkTerms = 4096
	// maxChunkInput is how much of a passage's text its terms are read
	// from (bytes): stepsMaxRunes Han characters and a long heading.
	maxChunkInput = 16 << 10
)

// Errors callers branch on.
var (
	// ErrUnreadable wraps what document extraction refused (its sentinel
	// errors follow it in the chain).
	ErrUnreadable = errors.New("knowledge: document cannot be read")
	// ErrInvalid is a document without a title, or whose audience names
	// users, departments or chats without a corp.
	ErrInvalid = errors.New("knowledge: invalid document")
	// ErrNotFound is a document id that does not exist.
	ErrNotFound = errors.New("knowledge: no such document")
)

// Audience says who may see a document, in the vocabulary of a skill's
// access (skills.Access): a caller passes when Corps is empty or names
// their corp, and (Users and Departments are both empty, or the caller is
// in Users, or one of their departments is in Departments), and (Chats is
// empty or the conversation is in Chats). Empty values never match.
type Audience struct {
	Corps       []string
	Users       []string
	Departments []string
	Chats       []string
}

func (a Audience) clean() Audience {
	return Audience{Corps: nonEmpty(a.Corps), Users: nonEmpty(a.Users), Departments: nonEmpty(a.Departments), Chats: nonEmpty(a.Chats)}
}

// Document is a stored document (one version).
type Document struct {
	ID        int64
	Key       string // names the document across versions; default Title
	Title     string
	Owner     string // who answers for it (HR, IT…), free text
	Version   string
	Effective time.Time // the date it takes effect; zero: none given
	Audience  Audience
	Source    string // where it came from (a path, "console")
	Kind      document.Kind
	Hash      string // sha256 of its bytes (and a folder file's sidecar), hex
	Chars     int
	Current   bool // the version in force of its key
	AddedBy   string
	AddedAt   time.Time
	Chunks    int   // passages (List only)
	Cited     int64 // answers that cited it
}

// NewDocument is a document to add: its bytes and what an operator says of it.
type NewDocument struct {
	Name      string // file name: a tie-breaker between CSV and text only
	Data      []byte
	Key       string // default Title
	Title     string // required
	Owner     string
	Version   string
	Effective time.Time
	Audience  Audience
	Source    string
	AddedBy   string
	// sidecar is a folder file's sidecar (sync.go), hashed with Data.
	sidecar []byte
}

// Added is what Add did.
type Added struct {
	Document Document
	// Unchanged: the same bytes were already stored under the same key;
	// nothing was written.
	Unchanged bool
	Chunks    int
}

// Add extracts n (media's document extraction, its caps), cuts it into
// passages and stores them with the document in one transaction, at
// now. The same bytes under the same key are a no-op (Added.Unchanged).
// Of the versions of one key, the one with the latest effective date (a
// version without one ranks below dated ones), then the latest added, is
// in force; the others are kept but not searched.
//
// Errors: ErrInvalid (no title, an audience without its corp),
// ErrUnreadable wrapping the extraction's error (document.ErrBomb,
// ErrCorrupt, ErrUnsupported…), a database error. On any error nothing
// is stored.
func Add(ctx context.Context, pool *pgxpool.Pool, n NewDocument, now time.Time) (Added, error) {
	d, chunks, err := prepare(ctx, n, now)
	if err != nil {
		return Added{}, err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return Added{}, fmt.Errorf("knowledge: add: %w", err)
	}
	defer tx.Rollback(ctx)
	out, err := addTx(ctx, tx, d, chunks)
	if err != nil {
		return Added{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Added{}, fmt.Errorf("knowledge: add: %w", err)
	}
	return out, nil
}

// prepare checks n, extracts it and cuts it into passages: everything
// of Add before the database.
func prepare(ctx context.Context, n NewDocument, now time.Time) (Document, []Chunk, error) {
	n.Title, n.Key = strings.TrimSpace(n.Title), strings.TrimSpace(n.Key)
	if n.Key == "" {
		n.Key = n.Title
	}
	n.Audience = n.Audience.clean()
	if err := n.validate(); err != nil {
		return Document{}, nil, err
	}
	hash := n.hash()
	res, err := document.Extract(ctx, n.Data, n.Name, document.Limits{MaxChars: MaxChars + 1})
	if err != nil {
		return Document{}, nil, fmt.Errorf("%w: %s: %w", ErrUnreadable, n.Name, err)
	}
	if res.Truncated {
		return Document{}, nil, fmt.Errorf("%w: %s: over %d characters", ErrUnreadable, n.Name, MaxChars)
	}
	chunks := Cut(res)
	if len(chunks) == 0 {
		return Document{}, nil, fmt.Errorf("%w: %s: %w", ErrUnreadable, n.Name, document.ErrEmpty)
	}
	d := Document{Key: n.Key, Title: n.Title, Owner: n.Owner, Version: n.Version, Effective: n.Effective,
		Audience: n.Audience, Source: n.Source, Kind: res.Kind, Hash: hash, Chars: res.Chars,
		AddedBy: n.AddedBy, AddedAt: now}
	return d, chunks, nil
}

// hash is the version's content hash: its bytes, and a folder file's
// sidecar, which is part of its version (a changed audience is a new
// version even when the file's bytes are not).
func (n NewDocument) hash() string {
	h := sha256.New()
	h.Write(n.Data)
	if n.sidecar != nil {
		h.Write([]byte{0})
		h.Write(n.sidecar)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (n NewDocument) validate() error {
	a := n.Audience
	switch {
	case n.Title == "":
		return fmt.Errorf("%w: %s: no title", ErrInvalid, n.Name)
	case len(a.Corps) == 0 && len(a.Users)+len(a.Departments)+len(a.Chats) > 0:
		// ids are only unique within a corp (skills/access.go).
		return fmt.Errorf("%w: %s: an audience of users, departments or chats names its corps", ErrInvalid, n.Name)
	}
	return nil
}

// addTx stores d and its chunks unless the same version is there.
func addTx(ctx context.Context, tx pgx.Tx, d Document, chunks []Chunk) (Added, error) {
	// Versions of one key are added one at a time, so that two replicas
	// syncing the same folder agree on which is current.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('knowledge:' || $1, 0))`, d.Key); err != nil {
		return Added{}, fmt.Errorf("knowledge: add: %w", err)
	}
	existing, err := scanDocs(tx.Query(ctx, `SELECT `+docColumns+` FROM knowledge_documents d
		WHERE doc_key = $1 AND content_hash = $2`, d.Key, d.Hash))
	if err != nil {
		return Added{}, err
	}
	if len(existing) > 0 {
		return Added{Document: existing[0], Unchanged: true}, nil
	}
	var eff *time.Time
	if !d.Effective.IsZero() {
		eff = &d.Effective
	}
	a := d.Audience
	err = tx.QueryRow(ctx, `INSERT INTO knowledge_documents
		(doc_key, title, owner, version, effective, corps, users, departments, chats, source, kind, content_hash, chars, added_by, added_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
		d.Key, d.Title, d.Owner, d.Version, eff, orEmpty(a.Corps), orEmpty(a.Users), orEmpty(a.Departments), orEmpty(a.Chats),
		d.Source, string(d.Kind), d.Hash, d.Chars, d.AddedBy, d.AddedAt).Scan(&d.ID)
	if err != nil {
		return Added{}, fmt.Errorf("knowledge: add: %w", err)
	}
	rows := make([][]any, len(chunks))
	for i, c := range chunks {
		terms := chunkTerms(d.Title, c)
		rows[i] = []any{d.ID, i, c.Heading, c.Page, c.Text, terms, len(terms)}
	}
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"knowledge_chunks"},
		[]string{"document_id", "seq", "heading", "page", "text", "terms", "nterms"}, pgx.CopyFromRows(rows))
	if err != nil {
		return Added{}, fmt.Errorf("knowledge: add passages: %w", err)
	}
	if err := electCurrent(ctx, tx, d.Key); err != nil {
		return Added{}, err
	}
	d.Current, err = isCurrent(ctx, tx, d.ID)
	if err != nil {
		return Added{}, err
	}
	return Added{Document: d, Chunks: len(chunks)}, nil
}

// chunkTerms are a passage's lexical terms: its document's title and its
// heading path count as its words, so 「婚假几天」 finds 「3 天」 under
// the heading 婚假.
func chunkTerms(title string, c Chunk) []string {
	text := title + "\n" + c.Heading + "\n" + c.Text
	return memory.TermsUpTo(text, maxChunkTerms, maxChunkInput)
}

// electCurrent marks the version in force of key.
func electCurrent(ctx context.Context, tx pgx.Tx, key string) error {
	_, err := tx.Exec(ctx, `UPDATE knowledge_documents SET current = (id = (
			SELECT id FROM knowledge_documents WHERE doc_key = $1
			ORDER BY effective DESC NULLS LAST, added_at DESC, id DESC LIMIT 1))
		WHERE doc_key = $1`, key)
	if err != nil {
		return fmt.Errorf("knowledge: elect current version: %w", err)
	}
	return nil
}

func isCurrent(ctx context.Context, tx pgx.Tx, id int64) (bool, error) {
	var cur bool
	if err := tx.QueryRow(ctx, `SELECT current FROM knowledge_documents WHERE id = $1`, id).Scan(&cur); err != nil {
		return false, fmt.Errorf("knowledge: add: %w", err)
	}
	return cur, nil
}

// Delete removes document id with its passages and vectors (one
// statement: the cascade), and puts the previous version of its key back
// in force when it was the current one.
//
// Errors: ErrNotFound, a database error.
func Delete(ctx context.Context, pool *pgxpool.Pool, id int64) (Document, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return Document{}, fmt.Errorf("knowledge: delete: %w", err)
	}
	defer tx.Rollback(ctx)
	d, err := deleteTx(ctx, tx, id)
	if err != nil {
		return Document{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Document{}, fmt.Errorf("knowledge: delete: %w", err)
	}
	return d, nil
}

func deleteTx(ctx context.Context, tx pgx.Tx, id int64) (Document, error) {
	docs, err := scanDocs(tx.Query(ctx, `DELETE FROM knowledge_documents d WHERE id = $1 RETURNING `+docColumns, id))
	if err != nil {
		return Document{}, err
	}
	if len(docs) == 0 {
		return Document{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err := electCurrent(ctx, tx, docs[0].Key); err != nil {
		return Document{}, err
	}
	return docs[0], nil
}

// List is every stored document, versions in force first, by title.
func List(ctx context.Context, q querier) ([]Document, error) {
	return scanDocs(q.Query(ctx, `SELECT `+docColumns+`,
		(SELECT count(*) FROM knowledge_chunks c WHERE c.document_id = d.id)
		FROM knowledge_documents d ORDER BY current DESC, title, added_at`))
}

const docColumns = `d.id, d.doc_key, d.title, d.owner, d.version, d.effective, d.corps, d.users, d.departments, d.chats,
	d.source, d.kind, d.content_hash, d.chars, d.current, d.added_by, d.added_at, d.cited`

// scanDocs reads rows of docColumns, and a passage count after them
// when the query has one.
func scanDocs(rows pgx.Rows, err error) ([]Document, error) {
	if err != nil {
		return nil, fmt.Errorf("knowledge: documents: %w", err)
	}
	counted := len(rows.FieldDescriptions()) > 18
	docs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Document, error) {
		var d Document
		var eff *time.Time
		var kind string
		dest := []any{&d.ID, &d.Key, &d.Title, &d.Owner, &d.Version, &eff, &d.Audience.Corps, &d.Audience.Users,
			&d.Audience.Departments, &d.Audience.Chats, &d.Source, &kind, &d.Hash, &d.Chars, &d.Current, &d.AddedBy, &d.AddedAt, &d.Cited}
		if counted {
			dest = append(dest, &d.Chunks)
		}
		err := r.Scan(dest...)
		if eff != nil {
			d.Effective = *eff
		}
		d.Kind = document.Kind(kind)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge: documents: %w", err)
	}
	return docs, nil
}

func nonEmpty(list []string) []string {
	var out []string
	for _, v := range list {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func orEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// runes is the length of s in characters.
func runes(s string) int { return utf8.RuneCountInString(s) }
