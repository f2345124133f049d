package privacy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/store"
)

// Person is one employee, as gateway/store finds their rows.
type Person = store.Person

// Export is everything Hermes holds about one person, for their data
// request (PIPL): what they wrote and were answered, the runs that
// answered them with each step, the replies sent to them, their
// attachments (described; the bytes stay, until media.retention, and are
// not copied here), what their sessions wait for, the reports they own and
// their memories. Content past privacy.retention is no longer held, and
// so not here.
type Export struct {
	Person      Person            `json:"person"`
	ExportedAt  time.Time         `json:"exported_at"`
	Messages    []ExportedMessage `json:"messages"`
	History     []ExportedTurn    `json:"conversation_history"`
	Runs        []ExportedRun     `json:"runs"`
	Replies     []ExportedReply   `json:"replies"`
	Attachments []ExportedMedia   `json:"attachments"`
	Pending     []json.RawMessage `json:"pending"`
	Reports     []ExportedReport  `json:"reports"`
	Memories    []memory.Exported `json:"memories"`
}

// ExportedMessage is one message the person sent.
type ExportedMessage struct {
	ID         int64     `json:"id"`
	Channel    string    `json:"channel"`
	Account    string    `json:"account"`
	ChatID     string    `json:"chat_id"`
	ChatType   string    `json:"chat_type"`
	SenderName string    `json:"sender_name"`
	Text       string    `json:"text"`
	Status     string    `json:"status"`
	ReceivedAt time.Time `json:"received_at"`
}

// ExportedTurn is one turn of the conversation history the model reads.
type ExportedTurn struct {
	SessionID int64     `json:"session_id"`
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	CreatedAt time.Time `json:"created_at"`
}

// ExportedRun is one run of the agent for the person, with its steps.
type ExportedRun struct {
	ID         string         `json:"id"`
	InboundID  *int64         `json:"inbound_id"`
	StopReason string         `json:"stop_reason"`
	Reply      string         `json:"reply"`
	Error      string         `json:"error"`
	StartedAt  time.Time      `json:"started_at"`
	Steps      []ExportedStep `json:"steps"`
}

// ExportedStep is one step of a run: a tool call with its arguments and
// what came back, or the model's text.
type ExportedStep struct {
	Kind        string `json:"kind"`
	Tool        string `json:"tool,omitempty"`
	Args        string `json:"args,omitempty"`
	Observation string `json:"observation,omitempty"`
	Content     string `json:"content,omitempty"`
	Error       string `json:"error,omitempty"`
}

// ExportedReply is one part of a reply sent (or to be sent) to the person.
type ExportedReply struct {
	Key         string     `json:"key"`
	Part        int        `json:"part"`
	Text        string     `json:"text"`
	CreatedAt   time.Time  `json:"created_at"`
	DeliveredAt *time.Time `json:"delivered_at"`
}

// ExportedMedia describes one attachment of the person's messages.
type ExportedMedia struct {
	InboundID int64     `json:"inbound_id"`
	Part      int       `json:"part"`
	Kind      string    `json:"kind"`
	Name      string    `json:"name"`
	MIME      string    `json:"mime"`
	Size      int64     `json:"size"`
	Held      bool      `json:"bytes_held"`
	Became    string    `json:"became"`
	FetchedAt time.Time `json:"fetched_at"`
}

// ExportedReport is a scheduled report the person owns.
type ExportedReport struct {
	Name      string          `json:"name"`
	Cron      string          `json:"cron"`
	Spec      json.RawMessage `json:"spec"`
	Targets   json.RawMessage `json:"targets"`
	Paused    bool            `json:"paused"`
	CreatedAt time.Time       `json:"created_at"`
}

// Count is how many records an export holds, for its audit row.
func (e Export) Count() int {
	return len(e.Messages) + len(e.History) + len(e.Runs) + len(e.Replies) + len(e.Attachments) +
		len(e.Pending) + len(e.Reports) + len(e.Memories)
}

// ExportOf reads everything held about p, in q (the caller's transaction,
// which writes its audit row).
func ExportOf(ctx context.Context, q store.Querier, p Person, now time.Time) (Export, error) {
	r, err := store.RowsOf(ctx, q, p)
	if err != nil {
		return Export{}, err
	}
	e := Export{Person: p, ExportedAt: now}
	reads := []func() error{
		func() (err error) {
			e.Messages, err = collect(ctx, q, `SELECT id, channel, account, chat_id, chat_type, sender_name, text, status, received_at
FROM inbound_messages WHERE id = ANY($1) ORDER BY id`, func(row pgx.CollectableRow) (m ExportedMessage, err error) {
				return m, row.Scan(&m.ID, &m.Channel, &m.Account, &m.ChatID, &m.ChatType, &m.SenderName, &m.Text, &m.Status, &m.ReceivedAt)
			}, r.Inbound)
			return err
		},
		func() (err error) {
			e.History, err = collect(ctx, q, `SELECT session_id, role, content, created_at FROM messages
WHERE session_id = ANY($1) ORDER BY id`, func(row pgx.CollectableRow) (t ExportedTurn, err error) {
				return t, row.Scan(&t.SessionID, &t.Role, &t.Content, &t.CreatedAt)
			}, r.Sessions)
			return err
		},
		func() (err error) {
			e.Runs, err = exportRuns(ctx, q, r.Runs)
			return err
		},
		func() (err error) {
			e.Replies, err = collect(ctx, q, `SELECT reply_key, part, text, created_at, delivered_at FROM outbox
WHERE reply_key = ANY($1) ORDER BY id`, func(row pgx.CollectableRow) (o ExportedReply, err error) {
				return o, row.Scan(&o.Key, &o.Part, &o.Text, &o.CreatedAt, &o.DeliveredAt)
			}, r.Replies)
			return err
		},
		func() (err error) {
			e.Attachments, err = collect(ctx, q, `SELECT inbound_id, part, kind, name, mime, size, data IS NOT NULL, became, fetched_at
FROM inbound_media WHERE inbound_id = ANY($1) ORDER BY inbound_id, part`, func(row pgx.CollectableRow) (m ExportedMedia, err error) {
				return m, row.Scan(&m.InboundID, &m.Part, &m.Kind, &m.Name, &m.MIME, &m.Size, &m.Held, &m.Became, &m.FetchedAt)
			}, r.Inbound)
			return err
		},
		func() (err error) {
			e.Pending, err = collect(ctx, q, `SELECT payload FROM session_pending WHERE session_id = ANY($1) ORDER BY session_id`,
				func(row pgx.CollectableRow) (p json.RawMessage, err error) { return p, row.Scan(&p) }, r.Sessions)
			return err
		},
		func() (err error) {
			e.Reports, err = collect(ctx, q, `SELECT name, cron, spec, targets, paused, created_at FROM reports
WHERE owner_corp = $1 AND owner_user = $2 ORDER BY id`, func(row pgx.CollectableRow) (rp ExportedReport, err error) {
				return rp, row.Scan(&rp.Name, &rp.Cron, &rp.Spec, &rp.Targets, &rp.Paused, &rp.CreatedAt)
			}, p.CorpID, p.UserID)
			return err
		},
		func() (err error) {
			e.Memories, err = memory.Export(ctx, q, memory.Owner{CorpID: p.CorpID, UserID: p.UserID})
			return err
		},
	}
	for _, read := range reads {
		if err := read(); err != nil {
			return Export{}, fmt.Errorf("privacy: export %s: %w", p, err)
		}
	}
	return e, nil
}

// exportRuns are runs with their steps, in the order they ran.
func exportRuns(ctx context.Context, q store.Querier, ids []string) ([]ExportedRun, error) {
	runs, err := collect(ctx, q, `SELECT id, inbound_id, stop_reason, reply, error, started_at FROM runs
WHERE id = ANY($1) ORDER BY started_at, id`, func(row pgx.CollectableRow) (r ExportedRun, err error) {
		return r, row.Scan(&r.ID, &r.InboundID, &r.StopReason, &r.Reply, &r.Error, &r.StartedAt)
	}, ids)
	if err != nil || len(runs) == 0 {
		return runs, err
	}
	type step struct {
		run string
		ExportedStep
	}
	steps, err := collect(ctx, q, `SELECT run_id, kind, tool, args, observation, content, error FROM (`+store.RunStepsSQL+`) t
ORDER BY run_id, seq`, func(row pgx.CollectableRow) (s step, err error) {
		return s, row.Scan(&s.run, &s.Kind, &s.Tool, &s.Args, &s.Observation, &s.Content, &s.Error)
	}, ids)
	if err != nil {
		return nil, err
	}
	at := make(map[string]int, len(runs))
	for i, r := range runs {
		at[r.ID] = i
	}
	for _, s := range steps {
		runs[at[s.run]].Steps = append(runs[at[s.run]].Steps, s.ExportedStep)
	}
	return runs, nil
}

// collect runs sql with args and scans every row with scan; never nil, so
// an export says "none" as [].
func collect[T any](ctx context.Context, q store.Querier, sql string, scan func(pgx.CollectableRow) (T, error), args ...any) ([]T, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, scan)
	if out == nil {
		out = []T{}
	}
	return out, err
}
