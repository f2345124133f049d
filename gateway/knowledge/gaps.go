package knowledge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
)

// TraceKind is the kind of the run trace's step that lists the passages
// knowledge_search gave and which of them the answer cited (Trace, as
// JSON in its observation).
const TraceKind = "knowledge"

// Bounds of what a message leaves behind.
const (
	// maxTraced bounds the passages one trace step lists: a run searches
	// a few times, knowledge.results passages each.
	maxTraced = 50
	// maxQuestionRunes bounds a gap's question (the employee's text).
	maxQuestionRunes = 500
	// recordTimeout bounds writing a gap and the citations, after the
	// run answered.
	recordTimeout = 2 * time.Second
)

// Trace is what a run's knowledge step shows: only passages the tool
// gave this asker, so nothing the asker may not see.
type Trace struct {
	Retrieved []Traced `json:"retrieved"`
}

// Traced is one passage given to the model.
type Traced struct {
	DocumentID int64  `json:"document_id"`
	Source     string `json:"source"` // as a citation names it (SourceOf)
	Seqs       []int  `json:"seqs"`
	Cited      bool   `json:"cited"`
}

// ParseTrace reads a knowledge step's observation; ok is false for any
// other step or an unreadable one.
func ParseTrace(kind, observation string) (Trace, bool) {
	var t Trace
	if kind != TraceKind || json.Unmarshal([]byte(observation), &t) != nil {
		return Trace{}, false
	}
	return t, true
}

func samePassage(a, b Passage) bool {
	return a.DocumentID == b.DocumentID && slices.Equal(a.Seqs, b.Seqs)
}

// traceStep is the trace step of the passages given (ps) and used.
func traceStep(ps, used []Passage, pageFormat string, now time.Time) agent.Step {
	t := Trace{Retrieved: []Traced{}}
	for i, p := range ps {
		if i == maxTraced {
			break
		}
		t.Retrieved = append(t.Retrieved, Traced{DocumentID: p.DocumentID, Source: SourceOf(p, pageFormat), Seqs: p.Seqs,
			Cited: slices.ContainsFunc(used, func(u Passage) bool { return samePassage(u, p) })})
	}
	body, _ := json.Marshal(t) // plain data: always marshals
	return agent.Step{Kind: TraceKind, Tool: ToolName, Observation: string(body), At: now}
}

// record keeps what an answer says about the documents: the documents it
// cited are counted, and a question no passage answered is a gap. A
// failure is logged; the reply goes out regardless.
func (k *Service) record(ctx context.Context, in channels.Inbound, given, used []Passage) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	var err error
	if len(used) == 0 {
		err = recordGap(ctx, k.s.Pool, in, len(given), k.s.Now())
	} else {
		var ids []int64
		for _, p := range used {
			if !slices.Contains(ids, p.DocumentID) {
				ids = append(ids, p.DocumentID)
			}
		}
		_, err = k.s.Pool.Exec(ctx, `UPDATE knowledge_documents SET cited = cited + 1, last_cited_at = $2 WHERE id = ANY($1)`, ids, k.s.Now())
	}
	if err != nil {
		k.s.Log.Warn("knowledge: gap or citation not recorded", "channel", in.Channel, "msg_id", in.MsgID, "err", err)
	}
}

// recordGap stores in's question as unanswered, found passages having
// been given; once per message (a retried run records it once).
func recordGap(ctx context.Context, q querier, in channels.Inbound, found int, now time.Time) error {
	question := []rune(in.Text)
	if len(question) > maxQuestionRunes {
		question = question[:maxQuestionRunes]
	}
	_, err := q.Exec(ctx, `INSERT INTO knowledge_gaps (inbound_id, corp_id, question, found, asked_at)
		SELECT id, $4, $5, $6, $7 FROM inbound_messages WHERE channel = $1 AND account = $2 AND platform_msg_id = $3
		ON CONFLICT (inbound_id) DO NOTHING`,
		in.Channel, in.Account, in.MsgID, in.Sender.CorpID, string(question), found, now)
	if err != nil {
		return fmt.Errorf("knowledge: record gap: %w", err)
	}
	return nil
}

// Gap is a question the documents did not answer, with how often it was
// asked (questions alike but for case, spaces and punctuation counted as
// one).
type Gap struct {
	Question string // its latest wording
	Asked    int
	// Unmatched is how many of those asks no passage matched at all (the
	// others got passages the answer did not use).
	Unmatched int
	Last      time.Time
}

// gapKeySQL is a question's normalised form: lower case, without spaces
// or punctuation (ASCII and CJK), so 「婚假几天？」 and 「婚假 几天」 count
// as one.
const gapKeySQL = `lower(regexp_replace(question, '[[:space:][:punct:]，。？！、；：“”‘’（）《》【】…—～·]+', '', 'g'))`

// Gaps are the unanswered questions asked since since, most asked first
// (then the latest), at most limit.
func Gaps(ctx context.Context, q querier, since time.Time, limit int) ([]Gap, error) {
	rows, err := q.Query(ctx, `SELECT (array_agg(question ORDER BY asked_at DESC, inbound_id DESC))[1], count(*),
		count(*) FILTER (WHERE found = 0), max(asked_at)
		FROM knowledge_gaps WHERE asked_at >= $1
		GROUP BY `+gapKeySQL+`
		ORDER BY count(*) DESC, max(asked_at) DESC LIMIT $2`, since, limit)
	if err != nil {
		return nil, fmt.Errorf("knowledge: gaps: %w", err)
	}
	gaps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Gap, error) {
		var g Gap
		err := r.Scan(&g.Question, &g.Asked, &g.Unmatched, &g.Last)
		return g, err
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge: gaps: %w", err)
	}
	return gaps, nil
}

// NeverCited are the documents in force that no answer has cited,
// oldest first.
func NeverCited(ctx context.Context, q querier) ([]Document, error) {
	return scanDocs(q.Query(ctx, `SELECT `+docColumns+` FROM knowledge_documents d
		WHERE current AND cited = 0 ORDER BY added_at, id`))
}
