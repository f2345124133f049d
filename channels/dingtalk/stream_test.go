package dingtalk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
	"github.com/hermes-gw/hermes/channels/guard"
)

// runStreamRobot runs r's stream connection until the test ends, through
// the reconnect loop as the gateway does; a panic it recovers is counted
// where Env.Panicked counts them.
func runStreamRobot(t *testing.T, r *robot, sink channels.Sink) {
	conns := (&Channel{robots: map[string]*robot{r.cfg.Name: r}}).Connections()
	if len(conns) != 1 {
		t.Fatalf("connections %+v, want the robot's one", conns)
	}
	watch := channels.Watch{Log: r.log, Panicked: func() { r.countPanic(guard.ErrPanic) }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = channels.Reconnect(ctx, conns[0], sink, watch); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func streamRobot(t *testing.T, fake *dingtalktest.Server, c *clock, keepalive time.Duration) *robot {
	return testRobot(t, fake, c, nil, func(s *RobotSection) {
		s.Mode, s.Keepalive, s.PingWait = ModeStream, keepalive, keepalive/2
	})
}

func waitConnections(t *testing.T, ctx context.Context, fake *dingtalktest.Server, made, live int) {
	t.Helper()
	if err := fake.WaitStream(ctx, func(_ []dingtalktest.Ack, m, l int) bool { return m >= made && l == live }); err != nil {
		t.Fatal(err)
	}
}

func ackOf(acks []dingtalktest.Ack, id string) (dingtalktest.Ack, bool) {
	for _, a := range acks {
		if a.MessageID == id {
			return a, true
		}
	}
	return dingtalktest.Ack{}, false
}

func TestStream_PingAndCallbackAck(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := streamRobot(t, fake, c, time.Minute)
	sink := chantest.NewSink()
	gate := sink.Hold()
	ctx := withTimeout(t, 10*time.Second)
	runStreamRobot(t, r, sink)
	waitConnections(t, ctx, fake, 1, 1)

	if err := fake.Ping(ctx, "ping-1", `{"opaque":"abc"}`); err != nil {
		t.Fatal(err)
	}
	m := dingtalktest.Message{MsgID: "msg-1", Text: "你好", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}
	id, err := fake.PushCallback(ctx, m.JSON())
	if err != nil {
		t.Fatal(err)
	}
	// The ping is answered while the message is still being stored, and
	// the message is not acked before Accept returned.
	if err := fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool { _, ok := ackOf(acks, "ping-1"); return ok }); err != nil {
		t.Fatal(err)
	}
	if a, _ := ackOf(fake.Acks(), "ping-1"); a.Code != 200 || a.Data != `{"opaque":"abc"}` {
		t.Errorf("ping answer %+v, want 200 echoing data", a)
	}
	if _, ok := ackOf(fake.Acks(), id); ok {
		t.Fatal("acked before Accept returned")
	}
	close(gate)
	if err := fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool { _, ok := ackOf(acks, id); return ok }); err != nil {
		t.Fatal(err)
	}
	if a, _ := ackOf(fake.Acks(), id); a.Code != 200 {
		t.Errorf("ack %+v", a)
	}
	acc := sink.Accepted()
	if len(acc) != 1 || acc[0].Sender.UserID != "zhangsan" || acc[0].Text != "你好" {
		t.Errorf("accepted %+v", acc)
	}
}

// When Accept fails the frame stays unacked; DingTalk pushes it again and
// the second time it is stored and acked.
func TestStream_NoAckWhenAcceptFails(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := streamRobot(t, fake, c, time.Minute)
	sink := chantest.NewSink()
	sink.FailWith(fmt.Errorf("%w: %w", channels.ErrUnavailable, errDown))
	ctx := withTimeout(t, 10*time.Second)
	runStreamRobot(t, r, sink)
	waitConnections(t, ctx, fake, 1, 1)

	m := dingtalktest.Message{MsgID: "msg-1", Text: "你好", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}
	id, err := fake.PushCallback(ctx, m.JSON())
	if err != nil {
		t.Fatal(err)
	}
	// After the failed Accept returned, a ping round trip on the same
	// socket: an ack written after Accept would have arrived before its
	// answer.
	if err := sink.Wait(ctx, "the failed Accept", func() bool { return sink.Calls() == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := fake.Ping(ctx, "ping-after", "x"); err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool { _, ok := ackOf(acks, "ping-after"); return ok }); err != nil {
		t.Fatal(err)
	}
	if _, ok := ackOf(fake.Acks(), id); ok {
		t.Fatal("acked although Accept failed")
	}
	sink.FailWith(nil)
	if ids, err := fake.Redeliver(ctx); err != nil || len(ids) != 1 {
		t.Fatalf("redelivered %v, %v", ids, err)
	}
	if err := fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool { _, ok := ackOf(acks, id); return ok }); err != nil {
		t.Fatal(err)
	}
	if n := len(sink.Accepted()); n != 1 {
		t.Errorf("accepted %d", n)
	}
}

// A connection DingTalk ends with a disconnect frame, and one that goes
// silent (no frames, no pongs), are replaced; the next message arrives and
// is acked on the new one.
func TestStream_ConnectionReplaced(t *testing.T) {
	for name, end := range map[string]func(ctx context.Context, fake *dingtalktest.Server) error{
		"Disconnect": func(ctx context.Context, fake *dingtalktest.Server) error { return fake.Disconnect(ctx) },
		"Silent":     func(_ context.Context, fake *dingtalktest.Server) error { return fake.Silence() },
	} {
		t.Run(name, func(t *testing.T) {
			fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
			r := streamRobot(t, fake, newClock(), 100*time.Millisecond)
			ctx := withTimeout(t, 10*time.Second)
			runStreamRobot(t, r, chantest.NewSink())
			waitConnections(t, ctx, fake, 1, 1)
			if err := end(ctx, fake); err != nil {
				t.Fatal(err)
			}
			waitConnections(t, ctx, fake, 2, 1)
			m := dingtalktest.Message{MsgID: "msg-2", Text: "还在吗", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}
			id, err := fake.PushCallback(ctx, m.JSON())
			if err != nil {
				t.Fatal(err)
			}
			if err := fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool { a, ok := ackOf(acks, id); return ok && a.Conn == 2 }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestStream_WrongSecretBacksOff(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	r := testRobot(t, fake, c, nil, func(s *RobotSection) { s.Mode, s.AppSecret = ModeStream, "wrong" })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := r.runStream(ctx, chantest.NewSink()); err == nil {
		t.Fatal("runStream returned nil")
	}
	if made, _ := fake.Connections(); made != 0 {
		t.Errorf("%d connections with a wrong secret", made)
	}
}

// A frame naming another corp is refused like an HTTP callback: not
// stored, recorded, and acked so that it does not come back forever.
func TestStream_OtherCorpRefused(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	r := streamRobot(t, fake, newClock(), time.Minute)
	sink := chantest.NewSink()
	ctx := withTimeout(t, 10*time.Second)
	runStreamRobot(t, r, sink)
	waitConnections(t, ctx, fake, 1, 1)

	m := dingtalktest.Message{MsgID: "msg-1", Text: "查一下张三的工资", ConversationID: "cid", StaffID: "zhangsan", CorpID: "dingothercorp"}
	id, err := fake.PushCallback(ctx, m.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool { _, ok := ackOf(acks, id); return ok }); err != nil {
		t.Fatal(err)
	}
	refused := sink.Refusals()
	if n := len(sink.Accepted()); n != 0 || len(refused) != 1 || refused[0] != "hr-bot/corp" {
		t.Errorf("accepted %d, refusals %v; want none accepted and hr-bot/corp", n, refused)
	}
}

// A panic on a robot message's goroutine (made here by the test hook, as
// no decoder is known to panic) ends that connection only: the process
// lives, the panic is counted, the frame stays unacked, and the robot
// reconnects and acks the next message on the new connection.
func TestStream_PanicEndsConnectionOnly(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	r := streamRobot(t, fake, newClock(), time.Minute)
	var mu sync.Mutex
	var panics []string
	r.env.Panicked = func(channel, account string) {
		mu.Lock()
		defer mu.Unlock()
		panics = append(panics, channel+"/"+account)
	}
	r.onFrame = func(data string) {
		if strings.Contains(data, "poison") {
			panic("test: poisoned frame")
		}
	}
	sink := chantest.NewSink()
	ctx := withTimeout(t, 10*time.Second)
	runStreamRobot(t, r, sink)
	waitConnections(t, ctx, fake, 1, 1)

	poison := dingtalktest.Message{MsgID: "poison", Text: "x", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}
	bad, err := fake.PushCallback(ctx, poison.JSON())
	if err != nil {
		t.Fatal(err)
	}
	waitConnections(t, ctx, fake, 2, 1)
	m := dingtalktest.Message{MsgID: "msg-2", Text: "还在吗", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}
	id, err := fake.PushCallback(ctx, m.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool { a, ok := ackOf(acks, id); return ok && a.Conn == 2 }); err != nil {
		t.Fatal(err)
	}
	if _, ok := ackOf(fake.Acks(), bad); ok {
		t.Error("the frame whose handling panicked was acked")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(panics) != 1 || panics[0] != "dingtalk/hr-bot" {
		t.Errorf("panics counted %v, want one for dingtalk/hr-bot", panics)
	}
	if acc := sink.Accepted(); len(acc) != 1 || acc[0].MsgID != "msg-2" {
		t.Errorf("accepted %+v, want msg-2 only", acc)
	}
}

// DingTalk refusing app_key / app_secret is the credentials' fault: the
// session says so, so the reconnect loop stands back longer.
func TestStream_WrongSecretIsRefusedCredentials(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	r := testRobot(t, fake, newClock(), nil, func(s *RobotSection) { s.Mode, s.AppSecret = ModeStream, "wrong" })
	if err := r.runStream(withTimeout(t, 5*time.Second), chantest.NewSink()); !errors.Is(err, channels.ErrCredentials) {
		t.Fatalf("runStream = %v, want ErrCredentials", err)
	}
	// Any other failure of the open call is not.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"code":"ServiceUnavailable","message":"try later"}`))
	}))
	t.Cleanup(down.Close)
	busy := testRobot(t, fake, newClock(), nil, func(s *RobotSection) { s.Mode, s.APIBaseURL = ModeStream, down.URL })
	if err := busy.runStream(withTimeout(t, 5*time.Second), chantest.NewSink()); err == nil || errors.Is(err, channels.ErrCredentials) ||
		!strings.Contains(err.Error(), "503") {
		t.Fatalf("runStream on a 503 = %v, want a plain failure", err)
	}
}
