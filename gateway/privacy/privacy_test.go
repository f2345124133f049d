package privacy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/privacy"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }

// said stores one exchange of p with the bot as the pipeline does, text
// in every place a message's content goes (the message and its raw
// payload, the history, the run's reply and step, an archived
// observation, a draft, the reply in the outbox, an attachment's name),
// dated at: the time it arrived.
func said(t *testing.T, pool *pgxpool.Pool, p privacy.Person, n int, text string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	in := channels.Inbound{Channel: "wecom", Account: "app", MsgID: fmt.Sprintf("msg-%s-%d", p.CorpID, time.Now().UnixNano()), MsgType: channels.TypeText,
		ChatID: p.UserID, ChatType: channels.ChatSingle, Text: text, ReplyTo: json.RawMessage(`{"to":"` + p.UserID + `"}`),
		Raw:    json.RawMessage(`{"Content":"` + text + `"}`),
		Sender: channels.Identity{UserID: p.UserID, CorpID: p.CorpID, Name: "员工" + p.UserID}}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		id, _, err := store.InsertInbound(ctx, tx, in, store.InboundDone)
		if err != nil {
			return err
		}
		session, err := store.EnsureSession(ctx, tx, store.SessionKeyOf(in), at)
		if err != nil {
			return err
		}
		run := fmt.Sprintf("run-%d-%d", n, time.Now().UnixNano())
		err = store.InsertRun(ctx, tx, store.RunRecord{ID: run, SessionID: session, InboundID: id, Model: "m", StopReason: "finished",
			Reply: "关于「" + text + "」：好的", StartedAt: at, FinishedAt: at}, []store.StepRecord{{Step: 1, Kind: "tool", Tool: "t",
			Args: `{"q":"` + text + `"}`, Observation: text, Error: "backend said " + text, Detail: []byte(`{"args":"` + text + `"}`)}})
		if err != nil {
			return err
		}
		if err := store.InsertTurn(ctx, tx, session, id, run, text, "好的："+text, at); err != nil {
			return err
		}
		if _, err := store.InsertOutbox(ctx, tx, store.Reply{Key: store.AnswerKey(id), Channel: "wecom", Account: "app",
			ReplyTo: in.ReplyTo, OrderKey: "wecom/app/" + p.UserID, Format: channels.FormatText, Parts: []string{"好的：" + text}}); err != nil {
			return err
		}
		if err := store.SaveDraft(ctx, tx, id, "草稿："+text, at); err != nil {
			return err
		}
		if err := store.SaveMedia(ctx, tx, store.MediaRow{InboundID: id, Part: 0, Kind: "file", Name: text + ".txt",
			Data: []byte(text), Size: int64(len(text)), MIME: "text/plain", FetchedAt: at}); err != nil {
			return err
		}
		// A confirmation card asked in the exchange: its body and its
		// buttons' labels are copies too, and it names the asker.
		if err := store.InsertCard(ctx, tx, store.Card{ID: fmt.Sprintf("card-%d-%d", n, time.Now().UnixNano()), Channel: "wecom", Account: "app",
			Kind: store.CardChoice, SessionID: session, RunID: run, ChatID: in.ChatID, ChatType: in.ChatType, ReplyTo: in.ReplyTo,
			Requester: in.Sender, RequesterRef: p.UserID, Title: "请选择", Body: "确认：" + text,
			Buttons: []channels.Button{{Action: "1", Label: "选项：" + text}}, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}); err != nil {
			return err
		}
		for _, sql := range []string{
			`INSERT INTO observation_archive (run_id, ref, content, created_at) VALUES ($1, 'obs1', $2, $3)`,
			`UPDATE inbound_messages SET received_at = $3 WHERE id = (SELECT inbound_id FROM runs WHERE id = $1) AND $2 <> ''`,
			`UPDATE messages SET created_at = $3 WHERE run_id = $1 AND $2 <> ''`,
			`UPDATE outbox SET created_at = $3, delivered_at = $3 WHERE reply_key = (SELECT 'inbound:' || inbound_id FROM runs WHERE id = $1) AND $2 <> ''`,
		} {
			if _, err := tx.Exec(ctx, sql, run, text, at); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRetentionErasesOnlyContentPastIt: content older than the cutoff is
// gone from every column, in batches smaller than the work, while the
// rows the console counts stay (emptied); newer content is untouched; a
// second pass finds nothing left to do.
func TestRetentionErasesOnlyContentPastIt(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	zhang := privacy.Person{CorpID: "ww-acme", UserID: "zhangsan"}
	old := []string{"旧消息一号-A7", "旧消息二号-B8", "旧消息三号-C9"}
	for i, text := range old {
		said(t, pool, zhang, i, text, now.AddDate(0, 0, -100+i))
	}
	said(t, pool, zhang, 9, "新消息-D1", now.Add(-time.Hour))
	clock := func() time.Time { return now }
	n, err := privacy.Retention(ctx, pool, now.AddDate(0, 0, -90), 2, clock)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("the retention changed nothing")
	}
	for _, text := range old {
		if found := storetest.CopiesOf(t, pool, text); len(found) > 0 {
			t.Errorf("%q past retention is still in %v", text, found)
		}
	}
	for _, table := range []string{"inbound_messages", "runs", "run_steps"} {
		var rows int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&rows); err != nil || rows != 4 {
			t.Errorf("%s holds %d rows (err %v), want all 4 kept for the counts", table, rows, err)
		}
	}
	var failedSteps int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM run_steps WHERE error <> ''`).Scan(&failedSteps); err != nil || failedSteps != 4 {
		t.Errorf("%d steps still count as failed (err %v), want 4", failedSteps, err)
	}
	if found := storetest.CopiesOf(t, pool, "新消息-D1"); len(found) < 8 {
		t.Errorf("the new message is left in %v only", found)
	}
	if again, err := privacy.Retention(ctx, pool, now.AddDate(0, 0, -90), 2, clock); err != nil || again != 0 {
		t.Errorf("a second pass changed %d rows (err %v), want 0", again, err)
	}
}

// TestExportThenEraseLeavesNothingOfThePerson: the export holds every
// exchange and memory of zhangsan and nothing of lisi; after the erasure,
// neither zhangsan's texts nor his user id are anywhere but the audit,
// while lisi's are all kept.
func TestExportThenEraseLeavesNothingOfThePerson(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	now := time.Now()
	zhang := privacy.Person{CorpID: "ww-acme", UserID: "zhangsan"}
	li := privacy.Person{CorpID: "ww-acme", UserID: "lisi"}
	said(t, pool, zhang, 1, "张三的请假理由-Q1", now.Add(-time.Hour))
	said(t, pool, zhang, 2, "张三的工位-Q2", now)
	said(t, pool, li, 1, "李四的消息-L1", now)
	for _, o := range []memory.Owner{memory.Owner(zhang), memory.Owner(li)} {
		if _, err := memory.Add(ctx, pool, memory.Memory{Owner: o, Kind: memory.KindFact, Text: "备注-" + o.UserID,
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}

	e, err := privacy.ExportOf(ctx, pool, zhang, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Messages) != 2 || len(e.History) != 4 || len(e.Runs) != 2 || len(e.Runs[0].Steps) != 1 || len(e.Replies) != 2 ||
		len(e.Attachments) != 2 || len(e.Memories) != 1 {
		t.Fatalf("export: %d messages, %d turns, %d runs, %d replies, %d attachments, %d memories",
			len(e.Messages), len(e.History), len(e.Runs), len(e.Replies), len(e.Attachments), len(e.Memories))
	}
	b, _ := json.Marshal(e)
	if strings.Contains(string(b), "李四") || strings.Contains(string(b), "lisi") || !strings.Contains(string(b), "张三的工位-Q2") {
		t.Fatalf("the export of zhangsan is wrong: %s", b)
	}

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		erased, err := privacy.Erase(ctx, tx, zhang)
		if err == nil && erased.Total() == 0 {
			err = fmt.Errorf("nothing erased")
		}
		if err == nil {
			err = memory.Audit(ctx, tx, "ops", privacy.AuditErase, memory.Owner(zhang), erased.Total(), now)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"张三的请假理由-Q1", "张三的工位-Q2", "备注-zhangsan", "员工zhangsan"} {
		if found := storetest.CopiesOf(t, pool, s); len(found) > 0 {
			t.Errorf("%q is still in %v after the erasure", s, found)
		}
	}
	if found := storetest.CopiesOf(t, pool, "zhangsan"); len(found) != 1 || !strings.HasPrefix(found[0], "memory_audit.user_id") {
		t.Errorf("zhangsan's id is still in %v, want only the audit", found)
	}
	if found := storetest.CopiesOf(t, pool, "李四的消息-L1"); len(found) < 8 {
		t.Errorf("lisi's message is left in %v only", found)
	}
	if again, err := privacy.ExportOf(ctx, pool, zhang, now); err != nil || again.Count() != 0 {
		t.Errorf("an export after the erasure holds %d records (err %v)", again.Count(), err)
	}
}

// TestForgettingScrubsEveryStoredCopy: a text forgotten (store.ScrubText,
// what /forget calls) is in no column afterwards, a card's body and
// buttons included.
func TestForgettingScrubsEveryStoredCopy(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	ctx := context.Background()
	zhang := privacy.Person{CorpID: "ww-acme", UserID: "zhangsan"}
	const secret = "我的工位是12F-031"
	said(t, pool, zhang, 1, secret, time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC))
	if found := storetest.CopiesOf(t, pool, secret); !strings.Contains(fmt.Sprint(found), "cards.body") {
		t.Fatalf("the exchange left no card to scrub: %v", found)
	}
	if err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := store.ScrubText(ctx, tx, zhang, []string{secret})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if found := storetest.CopiesOf(t, pool, secret); len(found) > 0 {
		t.Errorf("after forgetting, the text is still in %v", found)
	}
}
