package feishu_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

// hostileRig is one app's long connection to the fake, counting the
// panics the channel reports.
type hostileRig struct {
	api    *feishutest.Server
	sink   *chantest.Sink
	panics atomic.Int32
}

func newHostileRig(t *testing.T) *hostileRig {
	t.Helper()
	r := &hostileRig{sink: chantest.NewSink()}
	r.api = runConnectionEnv(t, r.sink, channels.Env{Panicked: func(channel, account string) {
		if channel != feishu.ChannelName || account != testAccount {
			t.Errorf("panic counted for %s/%s", channel, account)
		}
		r.panics.Add(1)
	}})
	return r
}

// pushOK sends a good event on the newest socket and waits for its 200 ack
// and its message in the sink: the connection still works.
func (r *hostileRig) pushOK(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	if err := r.api.PushEvent(ctx, "frame-"+id, feishutest.EventJSON(message(id, "p2p", "还在吗？")), 1); err != nil {
		t.Fatal(err)
	}
	acked := func() bool {
		return slices.ContainsFunc(r.api.Acks(), func(a feishutest.Ack) bool { return a.MessageID == "frame-"+id && a.Code == 200 })
	}
	if err := r.api.WaitFor(ctx, acked); err != nil {
		t.Fatalf("good event after the hostile ones not acked: %v (acks %+v)", err, r.api.Acks())
	}
	if err := r.sink.Wait(ctx, "the good event stored", func() bool {
		return slices.ContainsFunc(r.sink.Answered(), func(in channels.Inbound) bool { return in.MsgID == id })
	}); err != nil {
		t.Fatal(err)
	}
}

// pushFunc sends a test's frames on the fake's newest socket.
type pushFunc func(ctx context.Context, api *feishutest.Server) error

func (r *hostileRig) refusals() []string {
	return r.sink.Refusals()
}

// Frames no Feishu server sends, over a real socket: each is refused
// (answered with an error code when it can be answered, never 200),
// recorded as a refusal, and the same connection goes on serving events.
// The first case killed the process before (issue 16, item 4).
func TestHostileFramesRefused(t *testing.T) {
	event := func(id, sum, seq string, payload []byte) pushFunc {
		return func(ctx context.Context, api *feishutest.Server) error {
			return api.PushFrame(ctx, feishutest.EventFrame(id, sum, seq, payload))
		}
	}
	all := func(pushes ...pushFunc) pushFunc {
		return func(ctx context.Context, api *feishutest.Server) error {
			for _, p := range pushes {
				if err := p(ctx, api); err != nil {
					return err
				}
			}
			return nil
		}
	}
	part := bytes.Repeat([]byte("x"), feishu.MaxPayloadBytes/2)
	var partials []pushFunc
	for i := range feishu.MaxPartials + 1 {
		partials = append(partials, event(fmt.Sprintf("half-%d", i), "2", "0", []byte("{")))
	}
	manyHeaders := feishutest.EventFrame("headers", "1", "0", []byte("{}"))
	for i := range feishu.MaxHeaders {
		manyHeaders.Headers = append(manyHeaders.Headers, feishu.Header{Key: "k" + strconv.Itoa(i), Value: "v"})
	}
	otherApp := message("om_other", "p2p", "hi")
	otherApp.AppID = "cli_someone_else"

	for name, tc := range map[string]struct {
		push  pushFunc
		acks  map[string]int // message_id → ack code
		check string         // the refusal recorded
	}{
		"SumHuge":      {push: event("evil", "4611686018427387904", "0", []byte("x")), acks: map[string]int{"evil": 400}, check: "malformed"},
		"SumOverCap":   {push: event("evil", strconv.Itoa(feishu.MaxFragments+1), "0", []byte("x")), acks: map[string]int{"evil": 400}, check: "malformed"},
		"SumNegative":  {push: event("evil", "-3", "0", []byte("x")), acks: map[string]int{"evil": 400}, check: "malformed"},
		"SumNotNumber": {push: event("evil", "lots", "0", []byte("x")), acks: map[string]int{"evil": 400}, check: "malformed"},
		"SeqOutside":   {push: event("evil", "2", "2", []byte("x")), acks: map[string]int{"evil": 400}, check: "malformed"},
		"SumChanges": {push: all(event("evil", "2", "0", []byte("{")), event("evil", "3", "1", []byte("}"))),
			acks: map[string]int{"evil": 400}, check: "malformed"},
		"PayloadOverCap": {push: event("evil", "1", "0", bytes.Repeat([]byte("x"), feishu.MaxPayloadBytes+1)),
			acks: map[string]int{"evil": 400}, check: "malformed"},
		// Three fragments of half the cap each: the third is refused, and
		// a fourth of the same payload is dropped without a second refusal.
		"ReassembledOverCap": {push: all(event("evil", "4", "0", part), event("evil", "4", "1", part), event("evil", "4", "2", part), event("evil", "4", "3", part)),
			acks: map[string]int{"evil": 400}, check: "malformed"},
		"TooManyPartials": {push: all(partials...),
			acks: map[string]int{fmt.Sprintf("half-%d", feishu.MaxPartials): 400}, check: "malformed"},
		"NoMessageID":      {push: event("", "2", "0", []byte("{")), acks: map[string]int{"": 400}, check: "malformed"},
		"UndecodableEvent": {push: event("evil", "1", "0", []byte("not json")), acks: map[string]int{"evil": 400}, check: "malformed"},
		"OtherApp":         {push: event("evil", "1", "0", feishutest.EventJSON(otherApp)), acks: map[string]int{"evil": 401}, check: "token"},
		"NotProtobuf": {push: func(ctx context.Context, api *feishutest.Server) error {
			return api.PushBytes(ctx, []byte{0xff, 0xff, 0xff, 0xff})
		}, check: "malformed"},
		"TooManyHeaders": {push: func(ctx context.Context, api *feishutest.Server) error {
			return api.PushFrame(ctx, manyHeaders)
		}, check: "malformed"},
		"TextMessage": {push: func(ctx context.Context, api *feishutest.Server) error {
			return api.PushText(ctx, `{"type":"event"}`)
		}, check: "malformed"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newHostileRig(t)
			ctx := withTimeout(t, 10*time.Second)
			if err := tc.push(ctx, r.api); err != nil {
				t.Fatal(err)
			}
			r.pushOK(t, ctx, "om_after")
			// Every answer is in once as many acks as expected arrived.
			if err := r.api.WaitFor(ctx, func() bool { return len(r.api.Acks()) == len(tc.acks)+1 }); err != nil {
				t.Fatalf("acks %+v, want %v and the good event's", r.api.Acks(), tc.acks)
			}
			for _, a := range r.api.Acks() {
				if a.MessageID == "frame-om_after" {
					continue
				}
				if want, ok := tc.acks[a.MessageID]; !ok || a.Code != want {
					t.Errorf("ack %+v, want codes %v", a, tc.acks)
				}
			}
			if got, want := r.refusals(), []string{testAccount + "/" + tc.check}; !slices.Equal(got, want) {
				t.Errorf("refusals %v, want %v", got, want)
			}
			if acc := r.sink.Answered(); len(acc) != 1 {
				t.Errorf("accepted %+v, want only the good event", acc)
			}
			if n := r.api.Connections(); n != 1 {
				t.Errorf("%d sockets: a refused frame must not cost the connection", n)
			}
			if n := r.panics.Load(); n != 0 {
				t.Errorf("%d panics", n)
			}
		})
	}
}

// A panic while a frame is read or handled ends that connection only: it
// is counted, the app reconnects with its backoff and the new socket
// serves events; nothing else stops.
func TestPanicCostsOnlyTheConnection(t *testing.T) {
	for _, stage := range []string{"read", "handle"} {
		t.Run(stage, func(t *testing.T) {
			feishu.SetFrameHook(t, func(at string, f feishu.Frame) {
				if at == stage && f.Get(feishu.HdrMessageID) == "frame-boom" {
					panic("test: a frame the code does not handle")
				}
			})
			r := newHostileRig(t)
			ctx := withTimeout(t, 10*time.Second)
			if err := r.api.PushEvent(ctx, "frame-boom", feishutest.EventJSON(message("om_boom", "p2p", "hi")), 1); err != nil {
				t.Fatal(err)
			}
			if err := r.api.WaitFor(ctx, func() bool { return r.api.Connections() >= 2 }); err != nil {
				t.Fatalf("no new connection after the panic: %v", err)
			}
			if n := r.panics.Load(); n != 1 {
				t.Fatalf("%d panics counted, want 1", n)
			}
			for _, a := range r.api.Acks() {
				if a.MessageID == "frame-boom" && a.Code == 200 {
					t.Fatalf("the frame that panicked was acked as handled: %+v", a)
				}
			}
			r.pushOK(t, ctx, "om_after")
		})
	}
}
