package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Erased stands where a forgotten text was.
const Erased = "[已删除]"

// textColumns are the text columns that may hold a copy of what a person
// said or was told, and which of their keys selects the person's rows.
var textColumns = []struct {
	table, column, key string
	of                 func(PersonRows) any
}{
	{"inbound_messages", "text", "id", func(r PersonRows) any { return r.Inbound }},
	{"messages", "content", "session_id", func(r PersonRows) any { return r.Sessions }},
	{"runs", "reply", "id", func(r PersonRows) any { return r.Runs }},
	{"runs", "error", "id", func(r PersonRows) any { return r.Runs }},
	{"run_steps", "args", "run_id", func(r PersonRows) any { return r.Runs }},
	{"run_steps", "observation", "run_id", func(r PersonRows) any { return r.Runs }},
	{"run_steps", "content", "run_id", func(r PersonRows) any { return r.Runs }},
	{"run_steps", "error", "run_id", func(r PersonRows) any { return r.Runs }},
	{"observation_archive", "content", "run_id", func(r PersonRows) any { return r.Runs }},
	{"outbox", "text", "reply_key", func(r PersonRows) any { return r.Replies }},
	{"reply_drafts", "text", "inbound_id", func(r PersonRows) any { return r.Inbound }},
	{"inbound_media", "name", "inbound_id", func(r PersonRows) any { return r.Inbound }},
	{"inbound_media", "became", "inbound_id", func(r PersonRows) any { return r.Inbound }},
	{"knowledge_gaps", "question", "inbound_id", func(r PersonRows) any { return r.Inbound }},
	{"cards", "body", "session_id", func(r PersonRows) any { return r.Sessions }},
}

// jsonColumns are the JSON columns that may hold such a copy, with the
// key that selects a row (the primary key, or a part of it with seq).
var jsonColumns = []struct {
	table, column, key, rowKey string
	of                         func(PersonRows) any
}{
	{"inbound_messages", "raw", "id", "id::text", func(r PersonRows) any { return r.Inbound }},
	{"inbound_messages", "parts", "id", "id::text", func(r PersonRows) any { return r.Inbound }},
	{"inbound_messages", "quote", "id", "id::text", func(r PersonRows) any { return r.Inbound }},
	{"session_pending", "payload", "session_id", "session_id::text", func(r PersonRows) any { return r.Sessions }},
	{"cards", "options", "session_id", "id", func(r PersonRows) any { return r.Sessions }},
	{"run_steps", "detail", "run_id", "run_id || '/' || seq", func(r PersonRows) any { return r.Runs }},
	{"runs", "final_step", "id", "id", func(r PersonRows) any { return r.Runs }},
}

// ScrubText replaces every copy of each of texts in what is stored about
// p with Erased, in tx: their messages and the conversation, the traces
// and replies of the runs that answered them, drafts, attachments' names
// and what they became, what their sessions wait for. An attachment whose
// bytes hold a text loses its bytes. It returns how many values changed.
// Memories themselves are gateway/memory's to delete; it calls this when
// an employee forgets one.
func ScrubText(ctx context.Context, tx Querier, p Person, texts []string) (int64, error) {
	r, err := RowsOf(ctx, tx, p)
	if err != nil || len(r.Inbound) == 0 && len(r.Sessions) == 0 {
		return 0, err
	}
	var n int64
	for _, text := range texts {
		if text = strings.TrimSpace(text); text == "" {
			continue
		}
		for _, c := range textColumns {
			tag, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %[1]s SET %[2]s = replace(%[2]s, $2, $3) WHERE %[3]s = ANY($1) AND strpos(%[2]s, $2) > 0`,
				c.table, c.column, c.key), c.of(r), text, Erased)
			if err != nil {
				return n, fmt.Errorf("store: scrub %s.%s: %w", c.table, c.column, err)
			}
			n += tag.RowsAffected()
		}
		for _, c := range jsonColumns {
			m, err := scrubJSONColumn(ctx, tx, c.table, c.column, c.key, c.rowKey, c.of(r), text)
			if err != nil {
				return n, err
			}
			n += m
		}
		tag, err := tx.Exec(ctx, `UPDATE inbound_media SET data = NULL WHERE inbound_id = ANY($1) AND position(convert_to($2, 'UTF8') IN data) > 0`,
			r.Inbound, text)
		if err != nil {
			return n, fmt.Errorf("store: scrub inbound_media.data: %w", err)
		}
		n += tag.RowsAffected()
	}
	return n, nil
}

// scrubJSONColumn replaces text in every string of table.column's JSON in
// the rows whose key is among keys. Postgres prints jsonb with a string's
// quotes and backslashes escaped, so both forms are looked for.
func scrubJSONColumn(ctx context.Context, tx Querier, table, column, key, rowKey string, keys any, text string) (int64, error) {
	escaped := jsonEscaped(text)
	found, err := tx.Query(ctx, fmt.Sprintf(`SELECT %[4]s, %[2]s::text FROM %[1]s WHERE %[3]s = ANY($1) AND %[2]s IS NOT NULL
AND (strpos(%[2]s::text, $2) > 0 OR strpos(%[2]s::text, $3) > 0)`, table, column, key, rowKey), keys, text, escaped)
	if err != nil {
		return 0, fmt.Errorf("store: scrub %s.%s: %w", table, column, err)
	}
	type change struct{ key, value string }
	changes, err := pgx.CollectRows(found, func(row pgx.CollectableRow) (change, error) {
		var c change
		err := row.Scan(&c.key, &c.value)
		return c, err
	})
	if err != nil {
		return 0, fmt.Errorf("store: scrub %s.%s: %w", table, column, err)
	}
	for _, c := range changes {
		scrubbed, err := replaceInJSON([]byte(c.value), text)
		if err != nil {
			return 0, fmt.Errorf("store: scrub %s.%s: %w", table, column, err)
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s SET %s = $2::jsonb WHERE %s = $1`, table, column, rowKey), c.key, scrubbed); err != nil {
			return 0, fmt.Errorf("store: scrub %s.%s: %w", table, column, err)
		}
	}
	return int64(len(changes)), nil
}

// jsonEscaped is text as it stands inside a JSON string, without quotes.
func jsonEscaped(text string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(text) // a string always encodes
	return strings.TrimSuffix(strings.TrimSuffix(b.String(), "\n"), `"`)[1:]
}

// replaceInJSON is doc with text replaced by Erased in every string value
// and key.
func replaceInJSON(doc []byte, text string) (string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	var walk func(any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case string:
			return strings.ReplaceAll(t, text, Erased)
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		case map[string]any:
			out := make(map[string]any, len(t))
			for k, e := range t {
				out[strings.ReplaceAll(k, text, Erased)] = walk(e)
			}
			return out
		}
		return v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(walk(v)); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
