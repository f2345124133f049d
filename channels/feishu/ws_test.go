package feishu_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
	"github.com/hermes-gw/hermes/channels/guard"
)

// gatedSink holds Accept until released, to see when the frame is acked.
type gatedSink struct {
	*chantest.Sink
	entered chan struct{}
	release chan struct{}
}

func (s *gatedSink) Accept(ctx context.Context, in channels.Inbound) (channels.Receipt, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Sink.Accept(ctx, in)
}

// runConnection starts the app's long connection with short timings and
// stops it when the test ends.
func runConnection(t *testing.T, sink channels.Sink) *feishutest.Server {
	t.Helper()
	return runConnectionEnv(t, sink, channels.Env{})
}

// runConnectionEnv is runConnection with the channel built with env.
func runConnectionEnv(t *testing.T, sink channels.Sink, env channels.Env) *feishutest.Server {
	t.Helper()
	api := feishutest.NewServer(t, testAppID, testSecret)
	ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), env)
	app, _ := ch.App(testAccount)
	app.SetWSTimings(50*time.Millisecond, 200*time.Millisecond, 10*time.Millisecond)
	conns := ch.Connections()
	if len(conns) != 1 || conns[0].Exclusive || conns[0].Account != testAccount {
		t.Fatalf("connections %+v: Feishu spreads events over all clients, so none is exclusive", conns)
	}
	if len(ch.Routes(sink)) != 0 {
		t.Fatal("a websocket app has an HTTP route")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- channels.Reconnect(ctx, conns[0], sink, gatewayWatch(t, env)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if err := api.WaitFor(withTimeout(t, 5*time.Second), func() bool { return api.Connections() >= 1 }); err != nil {
		t.Fatal(err)
	}
	return api
}

// gatewayWatch is what the gateway's reconnect loop reports to: the log,
// and a recovered panic counted where env counts them.
func gatewayWatch(t *testing.T, env channels.Env) channels.Watch {
	return channels.Watch{Log: testLogger(t), Panicked: func() { env.CountPanic(feishu.ChannelName, testAccount, guard.ErrPanic) }}
}

func TestLongConnectionAcksOnlyAfterAccept(t *testing.T) {
	sink := &gatedSink{Sink: chantest.NewSink(), entered: make(chan struct{}, 1), release: make(chan struct{})}
	api := runConnection(t, sink)
	ctx := withTimeout(t, 5*time.Second)
	// Fragmented as Feishu does with large payloads: one ack, after the last.
	if err := api.PushEvent(ctx, "frame-1", feishutest.EventJSON(message("om_w1", "p2p", "我还有几天年假？")), 3); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sink.entered:
	case <-ctx.Done():
		t.Fatal("event not handed to Accept")
	}
	if acks := api.Acks(); len(acks) != 0 {
		t.Fatalf("acked before Accept returned: %+v", acks)
	}
	close(sink.release)
	if err := api.WaitFor(ctx, func() bool { return len(api.Acks()) == 1 }); err != nil {
		t.Fatal(err)
	}
	ack := api.Acks()[0]
	if ack.Code != 200 || ack.MessageID != "frame-1" || ack.BizRT == "" {
		t.Fatalf("ack %+v", ack)
	}
	acc := sink.Answered()
	if len(acc) != 1 || acc[0].MsgID != "om_w1" || acc[0].Text != "我还有几天年假？" || acc[0].Sender.UserID != testUserID {
		t.Fatalf("accepted %+v", acc)
	}
	if err := api.WaitFor(ctx, func() bool { return api.Pings() >= 2 }); err != nil {
		t.Fatal("no pings:", err)
	}
}

func TestLongConnectionNacksFailedAccept(t *testing.T) {
	sink := chantest.NewSink()
	sink.FailWith(errors.Join(channels.ErrUnavailable, errors.New("postgres down")))
	api := runConnection(t, sink)
	ctx := withTimeout(t, 5*time.Second)
	if err := api.PushEvent(ctx, "frame-2", feishutest.EventJSON(message("om_w2", "p2p", "hi")), 1); err != nil {
		t.Fatal(err)
	}
	if err := api.WaitFor(ctx, func() bool { return len(api.Acks()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if ack := api.Acks()[0]; ack.Code == 200 {
		t.Fatalf("a message not stored was acked as handled: %+v", ack)
	}
}

func TestSilentSocketIsReplaced(t *testing.T) {
	sink := chantest.NewSink()
	api := runConnection(t, sink)
	api.Silence()
	ctx := withTimeout(t, 5*time.Second)
	if err := api.WaitFor(ctx, func() bool { return api.Connections() >= 2 }); err != nil {
		t.Fatal("silent socket not replaced:", err)
	}
	if n := api.EndpointCalls(); n < 2 {
		t.Fatalf("%d endpoint calls: a new connection asks for a new URL", n)
	}
	// The new socket works.
	if err := api.PushEvent(ctx, "frame-3", feishutest.EventJSON(message("om_w3", "p2p", "hi")), 1); err != nil {
		t.Fatal(err)
	}
	if err := api.WaitFor(ctx, func() bool { return len(api.Acks()) == 1 }); err != nil {
		t.Fatal(err)
	}
}

// Wrong credentials: the endpoint answers a code with "data":{}; the
// connection keeps retrying with backoff and never dials.
func TestEndpointErrorRetried(t *testing.T) {
	api := feishutest.NewServer(t, testAppID, "another-secret")
	ch := newChannel(t, appYAML(api.URL(), feishu.ModeWebSocket, ""), channels.Env{})
	app, _ := ch.App(testAccount)
	app.SetWSTimings(50*time.Millisecond, 200*time.Millisecond, 5*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- channels.Reconnect(ctx, ch.Connections()[0], chantest.NewSink(), gatewayWatch(t, channels.Env{}))
	}()
	if err := api.WaitFor(withTimeout(t, 5*time.Second), func() bool { return api.EndpointCalls() >= 3 }); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if n := api.Connections(); n != 0 {
		t.Fatalf("%d sockets opened without a URL", n)
	}
}
