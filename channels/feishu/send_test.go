package feishu_test

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/gateway/store/storetest"
)

// acceptOne posts m and returns what the sink accepted.
func (r *eventRig) acceptOne(t *testing.T, m feishutest.Message) channels.Inbound {
	t.Helper()
	before := r.sink.Answered()
	if status, body := r.post(t, feishutest.EventJSON(m)); status != 200 {
		t.Fatalf("status %d %s", status, body)
	}
	acc := r.sink.Answered()
	if len(acc) != len(before)+1 {
		t.Fatalf("not accepted: %+v", m)
	}
	return acc[len(acc)-1]
}

func part(in channels.Inbound, text string, i, n int) channels.Outbound {
	return channels.Outbound{
		Account: in.Account, ReplyTo: in.ReplyTo, Format: channels.FormatMarkdown, Text: text,
		Part: i, Parts: n, Key: "inbound:" + in.MsgID + "/" + string(rune('0'+i)),
	}
}

func TestSendGroupReplyMentionsAsker(t *testing.T) {
	r := newEventRig(t, "")
	bot := feishutest.Mention{Key: "@_user_1", OpenID: r.api.BotOpenID, Name: "Hermes"}
	in := r.acceptOne(t, message("om_g", "group", "@_user_1 年假", bot))
	ctx := withTimeout(t, 10*time.Second)
	for i, text := range []string{"你还有 **5 天**年假。", "（续）"} {
		if _, err := r.ch.Send(ctx, part(in, text, i, 2)); err != nil {
			t.Fatal(err)
		}
	}
	got := r.api.Delivered()
	if len(got) != 2 || got[0].To != "om_g" || got[0].MsgType != "post" {
		t.Fatalf("got %+v", got)
	}
	if want := `<at user_id="` + testUserOpen + `"></at> 你还有 **5 天**年假。`; got[0].Text() != want {
		t.Fatalf("first part %q, want %q", got[0].Text(), want)
	}
	if got[1].Text() != "（续）" {
		t.Fatalf("second part %q: only the first mentions the asker", got[1].Text())
	}
}

func TestSendTextFormat(t *testing.T) {
	r := newEventRig(t, "")
	in := r.acceptOne(t, message("om_t", "p2p", "hi"))
	out := part(in, "处理中…", 0, 1)
	out.Format = channels.FormatText
	if _, err := r.ch.Send(withTimeout(t, 10*time.Second), out); err != nil {
		t.Fatal(err)
	}
	if got := r.api.Delivered(); len(got) != 1 || got[0].MsgType != "text" || got[0].Text() != "处理中…" {
		t.Fatalf("got %+v", got)
	}
}

// A retry of a part whose answer was lost carries the same uuid: Feishu
// shows it once.
func TestSendRetrySuppressedByUUID(t *testing.T) {
	r := newEventRig(t, "")
	in := r.acceptOne(t, message("om_r", "p2p", "hi"))
	ctx := withTimeout(t, 10*time.Second)
	for attempt := range 2 {
		out := part(in, "答案", 0, 1)
		out.Attempt = attempt
		if _, err := r.ch.Send(ctx, out); err != nil {
			t.Fatal(err)
		}
	}
	if all, shown := r.api.Replies(), r.api.Delivered(); len(all) != 2 || len(shown) != 1 || all[0].UUID == "" || all[0].UUID != all[1].UUID {
		t.Fatalf("replies %+v", all)
	}
}

func TestSendPermanentErrors(t *testing.T) {
	r := newEventRig(t, "")
	ctx := withTimeout(t, 10*time.Second)
	for name, out := range map[string]channels.Outbound{
		"BadAddress":     {Account: testAccount, ReplyTo: []byte(`{}`), Text: "x", Parts: 1},
		"UnknownAccount": {Account: "nobody", ReplyTo: []byte(`{"message_id":"om"}`), Text: "x", Parts: 1},
		"Empty":          {Account: testAccount, ReplyTo: []byte(`{"message_id":"om"}`), Text: " ", Parts: 1},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := r.ch.Send(ctx, out); !errors.Is(err, channels.ErrPermanent) {
				t.Fatalf("got %v, want ErrPermanent", err)
			}
		})
	}
}

// Two replicas share one Postgres token cache: the token is fetched once,
// and an expired token is refreshed once, whichever replica meets it.
func TestTokenRefreshedOnceAcrossReplicas(t *testing.T) {
	api := feishutest.NewServer(t, testAppID, testSecret)
	pool := storetest.NewPool(t)
	replica := func() *feishu.Channel {
		env := channels.Env{TokenCache: func(secret string) (channels.TokenCache, error) {
			return store.NewTokenCache(pool, secret, time.Now)
		}}
		return newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), env)
	}
	a, b := replica(), replica()
	rt := []byte(`{"message_id":"om_1","chat_id":"oc","open_id":"ou"}`)
	ctx := withTimeout(t, 20*time.Second)
	send := func(ch *feishu.Channel, key string) {
		t.Helper()
		if _, err := ch.Send(ctx, channels.Outbound{Account: testAccount, ReplyTo: rt, Format: channels.FormatText, Text: "hi", Parts: 1, Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	send(a, "k1")
	send(b, "k2")
	if n := api.TokenRequests(); n != 1 {
		t.Fatalf("token fetched %d times by two replicas, want 1", n)
	}
	api.InvalidateTokens() // Feishu revoked it before its expiry
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i, ch := range []*feishu.Channel{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ch.Send(ctx, channels.Outbound{Account: testAccount, ReplyTo: rt, Format: channels.FormatText, Text: "hi", Parts: 1, Key: "k3-" + string(rune('a'+i))})
			if err != nil {
				t.Error(err)
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := api.TokenRequests(); failed.Load() == 0 && n != 2 {
		t.Fatalf("token fetched %d times in all, want 2 (one refresh across both replicas)", n)
	}
	if got := len(api.Delivered()); got != 4 {
		t.Fatalf("%d replies delivered, want 4", got)
	}
}

// While a streaming card may show the first part of the answer, the
// delivery layer holds it back, until the stream deadline by the app's
// Limits (the hold itself: gateway/live_test.go); Send sends what it is
// given.
func TestSendDefersWhileAStreamMayShowIt(t *testing.T) {
	var now atomic.Pointer[time.Time]
	start := time.Now()
	now.Store(&start)
	clock := func() time.Time { return *now.Load() }
	api := feishutest.NewServer(t, testAppID, testSecret)
	ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, "    streaming: true\n    stream_deadline: 2m\n"), channels.Env{Now: clock})
	if l := ch.Limits(testAccount); !l.Streams || l.LiveDeadline != 2*time.Minute || l.LiveInterval <= 0 {
		t.Fatalf("streaming app does not stream: %+v, want the first part held until the stream deadline", l)
	}
	rt := []byte(`{"message_id":"om_s","chat_id":"oc","open_id":"ou","stream":true,"received_ms":` +
		strconv.FormatInt(start.UnixMilli(), 10) + `}`)
	ctx := withTimeout(t, 10*time.Second)
	out := channels.Outbound{Account: testAccount, ReplyTo: rt, Format: channels.FormatMarkdown, Text: "答案", Parts: 2, Key: "r/0", Answer: true}
	second := out
	second.Part, second.Key = 1, "r/1"
	if _, err := ch.Send(ctx, second); err != nil {
		t.Fatalf("part 1: %v", err)
	}
	// An async result to the same conversation is not the answer: at once.
	async := out
	async.Answer, async.Key, async.Text = false, "async:1/0", "审批已通过"
	if _, err := ch.Send(ctx, async); err != nil {
		t.Fatalf("async result deferred: %v", err)
	}
	later := start.Add(2*time.Minute + time.Second)
	now.Store(&later)
	if _, err := ch.Send(ctx, out); err != nil {
		t.Fatalf("after the deadline: %v", err)
	}
	if got := api.Delivered(); len(got) != 3 || !strings.Contains(got[2].Text(), "答案") {
		t.Fatalf("got %+v", got)
	}
}
