package knowledge

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A passage can end by announcing what follows: 「请在入职第一天按以下顺序
// 办理。」 before the steps, 「报销须附下列材料：」 before a list. Its own
// words match the question (入职第一天) while the answer (what to bring) is
// in the next passage, which shares none of them. Such a passage is given
// with the passage that follows it in its document.

// leadWords announce what follows when a passage's last sentence holds
// one.
var leadWords = []string{"以下", "如下", "下列"}

// leadsIn: text's last line ends with a colon, or its last sentence
// announces what follows.
func leadsIn(text string) bool {
	text = strings.TrimRight(strings.TrimSpace(text), ellipsis)
	if strings.HasSuffix(text, "：") || strings.HasSuffix(text, ":") {
		return true
	}
	segs := sentences(text)
	if len(segs) == 0 {
		return false
	}
	last := segs[len(segs)-1]
	for _, w := range leadWords {
		if strings.Contains(last, w) {
			return true
		}
	}
	return false
}

// followLeadIns appends to each of ps that leads in the passage after
// it in its document, read with the audience filter of c like any other.
func followLeadIns(ctx context.Context, q querier, c Caller, depts []string, ps []Passage) ([]Passage, error) {
	var docs []int64
	var seqs []int32
	for _, p := range ps {
		if len(p.Seqs) > 0 && leadsIn(p.Text) {
			docs, seqs = append(docs, p.DocumentID), append(seqs, int32(p.Seqs[len(p.Seqs)-1]+1))
		}
	}
	if len(docs) == 0 {
		return ps, nil
	}
	rows, err := q.Query(ctx, `SELECT c.document_id, c.seq, c.heading, c.text
		FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
		JOIN unnest($5::bigint[], $6::int[]) AS n(doc, seq) ON n.doc = c.document_id AND n.seq = c.seq
		WHERE `+visibleSQL, c.CorpID, c.UserID, depts, c.ChatID, docs, seqs)
	if err != nil {
		return nil, fmt.Errorf("knowledge: passages led into: %w", err)
	}
	type next struct {
		heading, text string
	}
	byKey := map[[2]int64]next{}
	var doc int64
	var seq int
	var n next
	_, err = pgx.ForEachRow(rows, []any{&doc, &seq, &n.heading, &n.text}, func() error {
		byKey[[2]int64{doc, int64(seq)}] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("knowledge: passages led into: %w", err)
	}
	for i, p := range ps {
		if len(p.Seqs) == 0 {
			continue
		}
		after := p.Seqs[len(p.Seqs)-1] + 1
		n, ok := byKey[[2]int64{p.DocumentID, int64(after)}]
		if !ok || !leadsIn(p.Text) {
			continue
		}
		p.Text += "\n"
		if n.heading != p.Heading && n.heading != "" {
			p.Text += marker(sectionOf(n.heading, p.Title))
		}
		p.Text += n.text
		p.Seqs = append(p.Seqs, after)
		ps[i] = p
	}
	return ps, nil
}
