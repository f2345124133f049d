package privacy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Audit actions of a data request (memory_audit.action), from `hermes
// privacy` and the console alike.
const (
	AuditExport = "privacy_export"
	AuditErase  = "privacy_erase"
)

// Expired stands where an error text was once its content was erased: the
// console still counts the runs and steps that failed.
const Expired = "[expired]"

// Erasure is what Erase did.
type Erasure struct {
	// Pseudonym now stands for the person's user id where rows stay for
	// the console's counts (their messages, sessions, async calls).
	Pseudonym string
	// Changed counts the rows deleted or emptied, per table.
	Changed map[string]int64
}

// Total is every row Erase deleted or emptied, for its audit row.
func (e Erasure) Total() int {
	var n int64
	for _, c := range e.Changed {
		n += c
	}
	return int(n)
}

// Erase deletes everything held about p, in q (the caller's transaction,
// which writes its audit row): their memories, conversation history,
// pending calls, drafts, attachments, the replies to them, the reports
// they own, and the content of their messages and of the runs that
// answered them. The rows of messages, runs and sessions stay, empty and
// under a random pseudonym in place of the user id, so the console's
// counts still add up and nothing links them to the person. A message of
// theirs not yet answered is given up (status failed) rather than answered
// with its text gone. Audit rows stay (who asked, when, how many).
func Erase(ctx context.Context, q store.Querier, p Person) (Erasure, error) {
	r, err := store.RowsOf(ctx, q, p)
	if err != nil {
		return Erasure{}, err
	}
	e := Erasure{Pseudonym: pseudonym(), Changed: map[string]int64{}}
	n, err := memory.DeleteAll(ctx, q, memory.Owner{CorpID: p.CorpID, UserID: p.UserID})
	if err != nil {
		return Erasure{}, err
	}
	e.Changed["memories"] = n
	steps := []struct {
		table, sql string
		args       []any
	}{
		{"messages", `DELETE FROM messages WHERE session_id = ANY($1)`, []any{r.Sessions}},
		{"session_pending", `DELETE FROM session_pending WHERE session_id = ANY($1)`, []any{r.Sessions}},
		{"cards", `DELETE FROM cards WHERE session_id = ANY($1)`, []any{r.Sessions}},
		{"reply_drafts", `DELETE FROM reply_drafts WHERE inbound_id = ANY($1)`, []any{r.Inbound}},
		{"observation_archive", `DELETE FROM observation_archive WHERE run_id = ANY($1)`, []any{r.Runs}},
		{"run_steps", `UPDATE run_steps SET args = '', observation = '', content = '', detail = NULL,
  error = CASE WHEN error <> '' THEN $2 ELSE '' END WHERE run_id = ANY($1)`, []any{r.Runs, Expired}},
		{"runs", `UPDATE runs SET reply = '', error = CASE WHEN error <> '' THEN $2 ELSE '' END,
  final_step = final_step || jsonb_build_object('args', '', 'observation', '', 'content', '', 'detail', NULL,
  'error', CASE WHEN final_step->>'error' <> '' THEN $2 ELSE '' END) WHERE id = ANY($1)`, []any{r.Runs, Expired}},
		{"outbox", `DELETE FROM outbox WHERE reply_key = ANY($1)`, []any{r.Replies}},
		{"inbound_media", `DELETE FROM inbound_media WHERE inbound_id = ANY($1)`, []any{r.Inbound}},
		{"knowledge_gaps", `DELETE FROM knowledge_gaps WHERE inbound_id = ANY($1)`, []any{r.Inbound}},
		{"reports", `DELETE FROM reports WHERE owner_corp = $1 AND owner_user = $2`, []any{p.CorpID, p.UserID}},
		// A private chat's id is the user's id on most platforms.
		{"inbound_messages", `UPDATE inbound_messages SET text = '', raw = NULL, parts = NULL, quote = NULL, sender_name = '',
  reply_to = '{}', sender_id = $2, chat_id = CASE WHEN chat_id = $3 THEN $2 ELSE chat_id END,
  status = CASE WHEN status = 'pending' THEN 'failed' ELSE status END WHERE id = ANY($1)`,
			[]any{r.Inbound, e.Pseudonym, p.UserID}},
		{"sessions", `UPDATE sessions SET user_id = $2, chat_id = CASE WHEN chat_id = $3 THEN $2 ELSE chat_id END WHERE id = ANY($1)`,
			[]any{r.Sessions, e.Pseudonym, p.UserID}},
		{"async_tasks", `UPDATE async_tasks SET user_id = $2 WHERE inbound_id = ANY($1)`, []any{r.Inbound, e.Pseudonym}},
	}
	for _, s := range steps {
		tag, err := q.Exec(ctx, s.sql, s.args...)
		if err != nil {
			return Erasure{}, fmt.Errorf("privacy: erase %s of %s: %w", s.table, p, err)
		}
		e.Changed[s.table] += tag.RowsAffected()
	}
	return e, nil
}

// pseudonym is a fresh random stand-in for an erased user id: random, not
// derived from the id, so that nobody can find the person's rows again by
// computing it.
func pseudonym() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return "erased-" + hex.EncodeToString(b)
}
