package knowledge_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/privacy"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// stored is in as the inbox stores it: a gap is kept by its message.
func stored(t *testing.T, k *knowledge.Service, in channels.Inbound) channels.Inbound {
	t.Helper()
	if _, _, err := store.InsertInbound(context.Background(), k.Base().Pool, in, "done"); err != nil {
		t.Fatal(err)
	}
	return in
}

func TestTraceListsRetrievedAndCitedPassagesOfTheAskerOnly(t *testing.T) {
	k := service(t)
	ctx := context.Background()
	for _, c := range []struct {
		name, user, dept string
		retrieved        []string // sources the step lists, "+" when cited, sorted
	}{
		{"Outsider", "zhangsan", "2", []string{"+《休假制度》2025版 · 婚假"}},
		{"HR", "lihr", "9", []string{"+《休假制度》2025版 · 婚假", "《薪酬等级表》"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := message(c.user, "婚假几天，总监月薪上限多少", c.dept)
			// Two searches of one run, as a model asks about two things: one
			// query for both would give only the better-matching passage (a
			// hit far below the best one is not given).
			call(t, k, in, "婚假几天")
			call(t, k, in, "薪酬等级表 总监月薪上限")
			_, steps := k.Annotate(ctx, in, "婚假为 3 天。")
			if len(steps) != 1 || steps[0].Kind != knowledge.TraceKind {
				t.Fatalf("steps = %+v", steps)
			}
			tr, ok := knowledge.ParseTrace(steps[0].Kind, steps[0].Observation)
			if !ok {
				t.Fatalf("unreadable trace %q", steps[0].Observation)
			}
			var got []string
			for _, p := range tr.Retrieved {
				mark := ""
				if p.Cited {
					mark = "+"
				}
				got = append(got, mark+p.Source)
			}
			slices.Sort(got)
			if strings.Join(got, "\n") != strings.Join(c.retrieved, "\n") {
				t.Fatalf("trace lists %q, want %q", got, c.retrieved)
			}
		})
	}
	if _, steps := k.Annotate(ctx, message("wangwu", "你好"), "你好！"); steps != nil {
		t.Fatalf("a run that searched nothing has a knowledge step: %+v", steps)
	}
}

func TestGapsAreTheQuestionsNoPassageAnswered(t *testing.T) {
	k := service(t)
	ctx := context.Background()
	ask := func(user, id, text, query, reply string) {
		t.Helper()
		in := message(user, text, "2")
		in.MsgID = id
		stored(t, k, in)
		call(t, k, in, query)
		k.Annotate(ctx, in, reply)
	}
	ask("zhangsan", "m1", "陪产假有几天？", "陪产假", "公司文档中没有关于陪产假的规定。")
	ask("lisi", "m2", "陪产假 有几天", "陪产假几天", "文档没有写陪产假。")
	ask("wangwu", "m3", "婚假的规定是什么", "婚假规定", "这个我不清楚。") // passages given, none used
	ask("zhaoliu", "m4", "婚假几天", "婚假几天", "婚假为 3 天。")   // answered: no gap

	gaps, err := knowledge.Gaps(ctx, k.Base().Pool, t0.Add(-time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 2 || gaps[0].Question != "陪产假 有几天" || gaps[0].Asked != 2 || gaps[0].Unmatched != 2 ||
		gaps[1].Question != "婚假的规定是什么" || gaps[1].Asked != 1 || gaps[1].Unmatched != 0 {
		t.Fatalf("gaps = %+v", gaps)
	}
	never, err := knowledge.NeverCited(ctx, k.Base().Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(never) != 1 || never[0].Title != "薪酬等级表" {
		t.Fatalf("never cited = %+v", never)
	}
}

// TestForgettingAndErasureLeaveNoCopyInGaps: an unanswered question is
// the employee's text; forgetting a memory scrubs it there, and erasing
// the person deletes their gaps.
func TestForgettingAndErasureLeaveNoCopyInGaps(t *testing.T) {
	k := service(t)
	ctx := context.Background()
	pool := k.Base().Pool
	const secretish = "我常驻上海办公室，工位 12F-031"
	in := stored(t, k, message("zhangsan", secretish+"，这层的打印机在哪？", "2"))
	call(t, k, in, "打印机在哪")
	k.Annotate(ctx, in, "文档里没有打印机的位置。")
	if found := storetest.CopiesOf(t, pool, secretish); len(found) == 0 || !strings.Contains(strings.Join(found, " "), "knowledge_gaps") {
		t.Fatalf("the gap was not recorded: %v", found)
	}
	person := store.Person{CorpID: corp, UserID: "zhangsan"}
	if err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := store.ScrubText(ctx, tx, person, []string{secretish})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if found := storetest.CopiesOf(t, pool, secretish); len(found) > 0 {
		t.Fatalf("after forgetting, the text is still in %v", found)
	}

	other := stored(t, k, message("lisi", "陪产假几天", "2"))
	call(t, k, other, "陪产假")
	k.Annotate(ctx, other, "文档没有写。")
	if err := store.InTx(ctx, pool, func(tx pgx.Tx) error {
		_, err := privacy.Erase(ctx, tx, privacy.Person{CorpID: corp, UserID: "lisi"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if found := storetest.CopiesOf(t, pool, "陪产假几天"); len(found) > 0 {
		t.Fatalf("after erasure, the question is still in %v", found)
	}
}
