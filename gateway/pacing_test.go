package gateway_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// stampedChannel is the test channel, recording the gateway clock's time
// of every send as the platform would count it.
type stampedChannel struct {
	*chantest.Channel
	mu sync.Mutex
	at []time.Time // at[i] is when Sent()[i] went out
}

func newStampedChannel(limits channels.Limits, clock *gatewaytest.JumpClock) *stampedChannel {
	c := &stampedChannel{Channel: chantest.New("test", limits)}
	c.FailWith(func(channels.Outbound) error { // called just before the send is recorded
		c.mu.Lock()
		defer c.mu.Unlock()
		c.at = append(c.at, clock.Now())
		return nil
	})
	return c
}

func (c *stampedChannel) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.at)
}

// maxInWindow is the most sends in any closed window of length w.
func maxInWindow(at []time.Time, w time.Duration) int {
	at = slices.Clone(at)
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, j := 0, 0; i < len(at); i++ {
		for at[i].Sub(at[j]) > w {
			j++
		}
		most = max(most, i-j+1)
	}
	return most
}

// driveTime runs the deliveries until done: whenever no job runs or is
// due, it jumps clock and River's schedule to the next scheduled delivery
// (a real minute of pacing takes a moment).
func driveTime(h *gatewaytest.Harness, ctx context.Context, clock *gatewaytest.JumpClock, done func() bool) {
	h.T.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		var busy int
		var wait *float64 // seconds
		// Busy too: runs and sends a replica does itself, without a job
		// (their rows' inline_until is set meanwhile): a jump during a run
		// would have it show a processing hint.
		err := h.Pool.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE state = 'running' OR (state = 'available' AND scheduled_at <= now()))
       + (SELECT count(*) FROM inbound_messages WHERE inline_until IS NOT NULL)
       + (SELECT count(*) FROM outbox WHERE inline_until IS NOT NULL),
       extract(epoch FROM min(scheduled_at - now()) FILTER (WHERE kind = 'hermes.deliver_reply' AND state IN ('available', 'scheduled', 'retryable') AND scheduled_at > now()))
FROM river_job WHERE state NOT IN ('completed', 'discarded', 'cancelled')`).Scan(&busy, &wait)
		if err != nil {
			h.T.Fatal(err)
		}
		if busy == 0 && wait != nil {
			d := time.Duration(*wait * float64(time.Second))
			clock.Jump(d)
			_, err := h.Pool.Exec(ctx, `
UPDATE river_job SET scheduled_at = scheduled_at - $1 * interval '1 microsecond',
       state = CASE WHEN scheduled_at - $1 * interval '1 microsecond' <= now() THEN 'available'::river_job_state ELSE state END
WHERE kind = 'hermes.deliver_reply' AND state IN ('available', 'scheduled', 'retryable')`, d.Microseconds())
			if err != nil {
				h.T.Fatal(err)
			}
			// Wake the queue's producers as a River insert does, rather
			// than leave them to their next poll.
			if _, err := h.Pool.Exec(ctx, `SELECT pg_notify(current_schema() || '.river_insert', $1)`, `{"queue":"`+gateway.QueueDelivery+`"}`); err != nil {
				h.T.Fatal(err)
			}
		}
		select {
		case <-ctx.Done():
			h.T.Fatalf("deliveries not done: %v", ctx.Err())
		case <-tick.C:
		}
	}
}

// 36 replies to one group through two replicas, with the group limited to
// 20 a minute: no minute carries more than 20 (the token bucket let 40
// through at once, 20 per replica), the burst goes out over time, and
// every reply arrives once, each user's in the order of their messages
// (the replies of different users are in the order their runs commit).
func TestPacingHoldsAGroupToItsLimitAcrossReplicas(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	const perMinute = 20
	h, ch, clock, replicas := pacedReplicas(t, channels.Limits{PerMinute: perMinute})
	ctx := gatewaytest.WithTimeout(t, 90*time.Second)
	const users, each = 3, 12
	for m := range each {
		for u := range users {
			user := fmt.Sprintf("user%d", u)
			gatewaytest.Accept(t, replicas[(u+m)%2], ch.Message("a", fmt.Sprintf("%s-%d", user, m), "group-1", user, fmt.Sprintf("问题%d", m), true, true))
		}
	}
	driveTime(h, ctx, clock, func() bool { return len(ch.Sent()) >= users*each })
	h.WaitIdle(ctx)

	sent, at := ch.Sent(), ch.times()
	if len(sent) != users*each {
		t.Fatalf("%d replies sent, want %d", len(sent), users*each)
	}
	if most := maxInWindow(at, time.Minute); most > perMinute {
		t.Errorf("%d sends to the group within a minute, want at most %d", most, perMinute)
	}
	if span := at[len(at)-1].Sub(at[0]); span < time.Minute {
		t.Errorf("36 sends took %s, want them spread over more than a minute", span)
	}
	got := textsByUser(sent)
	for u, texts := range got {
		for i, text := range texts {
			if !strings.HasSuffix(text, fmt.Sprintf("答：问题%d", i)) {
				t.Fatalf("%s's reply %d is %q (all: %q)", u, i, text, texts)
			}
		}
		if len(texts) != each {
			t.Errorf("%s got %d replies, want %d", u, len(texts), each)
		}
	}
	// Each part of the group's outbox went out exactly once.
	var want []string
	rows, err := h.Pool.Query(ctx, `SELECT reply_key || '/' || part FROM outbox WHERE order_key = 'test/a/group-1' AND delivered_at IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	var keys []string
	for _, out := range sent {
		keys = append(keys, out.Key)
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("sent parts %q, want each delivered part once: %q", keys, want)
	}
}

// pacedReplicas are two replicas on one stamped channel with the pacing
// limits of limits, on a clock the test drives.
func pacedReplicas(t *testing.T, limits channels.Limits) (*gatewaytest.Harness, *stampedChannel, *gatewaytest.JumpClock, []*gateway.Gateway) {
	h := gatewaytest.New(t)
	echoModel(h)
	clock := &gatewaytest.JumpClock{}
	limits.MaxBytes, limits.Format, limits.Dialect = 2048, channels.FormatMarkdown, channels.DialectStandard
	ch := newStampedChannel(limits, clock)
	replicas := []*gateway.Gateway{
		h.Start(gateway.Deps{Channels: []channels.Channel{ch}, Now: clock.Now}),
		h.Start(gateway.Deps{Channels: []channels.Channel{ch}, Now: clock.Now}),
	}
	return h, ch, clock, replicas
}

// textsByUser are the texts sent, per user, in the order they were sent.
func textsByUser(sent []channels.Outbound) map[string][]string {
	got := map[string][]string{}
	for _, out := range sent {
		u := chantest.AddressOf(out).UserID
		got[u] = append(got[u], out.Text)
	}
	return got
}

// Six users of one account, five messages each, through two replicas,
// with the account limited to 20 sends a minute across its chats: no
// minute carries more than 20, and all 30 arrive once, in order per user.
func TestPacingHoldsAnAccountToItsLimitAcrossReplicas(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	const perMinute = 20
	h, ch, clock, replicas := pacedReplicas(t, channels.Limits{AccountPerMinute: perMinute})
	ctx := gatewaytest.WithTimeout(t, 90*time.Second)
	const users, each = 6, 5
	for m := range each {
		for u := range users {
			user := fmt.Sprintf("user%d", u)
			gatewaytest.Accept(t, replicas[(u+m)%2], ch.Message("a", fmt.Sprintf("%s-%d", user, m), user, user, fmt.Sprintf("问题%d", m), false, false))
		}
	}
	driveTime(h, ctx, clock, func() bool { return len(ch.Sent()) >= users*each })
	h.WaitIdle(ctx)

	sent, at := ch.Sent(), ch.times()
	if len(sent) != users*each {
		t.Fatalf("%d replies sent, want %d", len(sent), users*each)
	}
	if most := maxInWindow(at, time.Minute); most > perMinute {
		t.Errorf("%d sends of the account within a minute, want at most %d", most, perMinute)
	}
	got := textsByUser(sent)
	if len(got) != users {
		t.Fatalf("%d users got replies, want %d", len(got), users)
	}
	for u, texts := range got {
		for i, text := range texts {
			if text != fmt.Sprintf("答：问题%d", i) {
				t.Fatalf("%s's reply %d is %q (all: %q)", u, i, text, texts)
			}
		}
		if len(texts) != each {
			t.Errorf("%s got %d replies, want %d", u, len(texts), each)
		}
	}
}

// A part held back for a live reply (a stream shows it) did not go out,
// so it uses no slot: with one send a minute allowed, the part after it
// still goes at once.
func TestDeferredPartUsesNoSlot(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	long := strings.Repeat("这是一段很长的回答。", 100) // two parts of 2,048 bytes
	h.Model.Script(openaitest.Reply{Content: long})
	ch := chantest.New("test", channels.Limits{MaxBytes: 2048, Format: channels.FormatMarkdown, Streams: true, PerMinute: 1,
		LiveDeadline: time.Hour})
	gw := h.Start(gateway.Deps{Channels: []channels.Channel{ch}})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	gatewaytest.Accept(t, gw, ch.Message("a", "st-1", "zhangsan", "zhangsan", "讲讲制度", false, false))
	ref := channels.MessageRef{Channel: "test", Account: "a", MsgID: "st-1"}
	for p := (channels.Progress{}); !p.Done; {
		var err error
		if p, err = gw.Progress(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	// The delivery looked at part 0 (and held it) before the stream showed
	// it.
	for h.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.deliver_reply' AND attempted_at IS NOT NULL`) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("part 0 was never tried")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := gw.Shown(ctx, ref); err != nil {
		t.Fatal(err)
	}
	sent, err := ch.WaitSent(gatewaytest.WithTimeout(t, 10*time.Second), 1)
	if err != nil {
		t.Fatalf("the part after the deferred one waits for a slot: %v", err)
	}
	if sent[0].Part != 1 {
		t.Fatalf("sent %+v, want the second part", sent[0])
	}
}
