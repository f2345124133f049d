package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/guard"
)

// Bounds on one long connection's work.
const (
	// maxHandling caps the events being stored at once on one connection,
	// so that what they hold is at most maxHandling × maxPayloadBytes
	// (32 MiB). An Accept takes milliseconds and Feishu has a few events in
	// flight per client; an event past the cap is answered 503 at once and
	// Feishu delivers it again.
	maxHandling = 32
	// answerTimeout bounds each answer to a frame (its ack, the record of
	// its refusal): an ack later than CallbackDeadline is useless, Feishu
	// has delivered the event again, and a peer that does not read our acks
	// for that long is taken for dead (a write whose context ends closes
	// the socket).
	answerTimeout = CallbackDeadline
)

// frameHook, when set (tests only), is called with every frame the reader
// decoded, in the reader ("read") and in the handler of a complete event
// ("handle"): a test makes either panic to see what a panic costs.
var frameHook atomic.Pointer[func(stage string, f Frame)]

func runFrameHook(stage string, f Frame) {
	if h := frameHook.Load(); h != nil {
		(*h)(stage, f)
	}
}

// wsSession is one socket of an app's long connection: its reader, the
// fragments it reassembles and the handlers of the events it read.
type wsSession struct {
	app  *App
	conn *websocket.Conn
	sink channels.Sink
	// ctx ends with the socket; a handler that panicked cancels it with
	// its error, which ends the reader and thus the connection.
	ctx      context.Context
	cancel   context.CancelCauseFunc
	frags    *fragments
	handling chan struct{} // one token per running handler, maxHandling
	handlers sync.WaitGroup
}

// connectOnce runs one connection until it fails or ctx ends. A panic in
// the reader or in an event's handler ends this connection only, with an
// error wrapping guard.ErrPanic.
func (a *App) connectOnce(ctx context.Context, sink channels.Sink) error {
	var ep endpointAnswer
	body := map[string]string{"AppID": a.cfg.AppID, "AppSecret": a.cfg.AppSecret}
	if _, err := a.api.do(ctx, http.MethodPost, endpointPath, nil, "", body, &ep); err != nil {
		return fmt.Errorf("feishu: long-connection endpoint: %w", err)
	}
	if refusedCodes[ep.Code] {
		return fmt.Errorf("feishu: long-connection endpoint: code %d: %s (check app_id and app_secret): %w", ep.Code, ep.Msg, channels.ErrCredentials)
	}
	if ep.Code != 0 || ep.Data.URL == "" {
		return fmt.Errorf("feishu: long-connection endpoint: code %d: %s", ep.Code, ep.Msg)
	}
	u, err := url.Parse(ep.Data.URL)
	if err != nil {
		return fmt.Errorf("feishu: long-connection URL: %w", err)
	}
	serviceID, _ := strconv.ParseInt(u.Query().Get("service_id"), 10, 32)
	ping := a.ws.ping
	if s := time.Duration(ep.Data.ClientConfig.PingInterval) * time.Second; s > 0 && s < ping {
		ping = s
	}

	conn, _, err := websocket.Dial(ctx, ep.Data.URL, nil)
	if err != nil {
		return fmt.Errorf("feishu: dial long connection: %w", err)
	}
	conn.SetReadLimit(maxFrameBytes)
	defer conn.CloseNow()
	a.log.Info("feishu: long connection up", "service_id", serviceID)

	s := &wsSession{app: a, conn: conn, sink: sink, frags: newFragments(a.ws.fragmentTTL), handling: make(chan struct{}, maxHandling)}
	s.ctx, s.cancel = context.WithCancelCause(ctx)
	defer s.cancel(nil)
	defer s.handlers.Wait() // events being stored are still acked
	go a.pingLoop(s.ctx, conn, int32(serviceID), ping)

	return guard.Run(func() error { return s.read(ping + a.ws.pongWait) })
}

// read reads frames until the socket fails, stays silent longer than
// silence, or a handler panicked.
func (s *wsSession) read(silence time.Duration) error {
	for {
		rctx, rcancel := context.WithTimeout(s.ctx, silence)
		typ, data, err := s.conn.Read(rctx)
		rcancel()
		if err != nil {
			if cause := context.Cause(s.ctx); cause != nil {
				err = cause
			} else if rctx.Err() != nil {
				err = fmt.Errorf("silent for %s, replacing the socket", silence)
			}
			return fmt.Errorf("feishu: long connection: %w", err)
		}
		if typ != websocket.MessageBinary {
			s.refuse(nil, fmt.Errorf("%w: a %s message, not a binary frame", ErrMalformed, typ), time.Now())
			continue
		}
		f, err := UnmarshalFrame(data)
		if err != nil {
			s.refuse(nil, err, time.Now())
			continue
		}
		runFrameHook("read", f)
		if f.Method == FrameData && f.Get(HdrType) == TypeEvent {
			s.event(f)
		}
	}
}

// event takes one event frame: a fragment waits for the others; a whole
// payload is handed to a handler of its own, or answered 503 when
// maxHandling are running.
func (s *wsSession) event(f Frame) {
	start := time.Now()
	payload, complete, err := s.frags.add(f, s.app.now())
	if err != nil {
		s.refuse(&f, err, start)
		return
	}
	if !complete {
		return
	}
	select {
	case s.handling <- struct{}{}:
	default:
		s.app.log.Warn("feishu: too many events being stored at once; Feishu delivers this one again",
			"message_id", f.Get(HdrMessageID), "max", maxHandling)
		s.answer(f, http.StatusServiceUnavailable, start)
		return
	}
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		defer func() { <-s.handling }()
		err := guard.Run(func() error {
			s.handle(f, payload, start)
			return nil
		})
		if err != nil {
			s.cancel(err)
		}
	}()
}

// handle stores one event and only then acks it: {"code":200} after
// sink.Accept returned (or for an event Hermes does not answer),
// {"code":500} when it failed, so that Feishu delivers it again (to this
// or another client), and the HTTP route's refusal status for an event
// that cannot be read.
func (s *wsSession) handle(f Frame, payload []byte, start time.Time) {
	runFrameHook("handle", f)
	a := s.app
	in, ok, err := a.decodeEvent(s.ctx, payload)
	switch {
	case errors.Is(err, channels.ErrUnavailable):
		a.log.Warn("feishu: event not decoded now; Feishu delivers it again", "err", err)
		s.answer(f, http.StatusInternalServerError, start)
		return
	case err != nil:
		s.refuse(&f, err, start)
		return
	case !ok:
		s.answer(f, http.StatusOK, start)
		return
	}
	receipt, err := s.sink.Accept(s.ctx, in)
	if err != nil {
		a.log.Warn("feishu: event not stored; Feishu delivers it again", "msg_id", in.MsgID, "err", err)
		s.answer(f, http.StatusInternalServerError, start)
		return
	}
	var data []byte
	if in.Click != nil {
		data = cardAnswer(receipt.Card) // the tap's answer rides in the ack
	}
	if s.answerData(f, http.StatusOK, start, data) {
		a.log.Debug("feishu: event acked", "msg_id", in.MsgID, "ack_ms", time.Since(start).Milliseconds())
	}
}

// refuse answers a frame that is not what Feishu sends the way the HTTP
// route answers such an event: it is logged, recorded for the console
// (channels.Sink.Refused, counted in callback_refusals) and, when it could
// be decoded, acked with the HTTP route's status (400, 401), never 200.
// The socket stays up.
func (s *wsSession) refuse(f *Frame, err error, start time.Time) {
	check := channels.RefusalCheck(err)
	if check == "" {
		check = channels.CheckMalformed
	}
	s.app.log.Warn("feishu: long-connection frame refused", "check", check, "err", err)
	ctx, cancel := context.WithTimeout(s.ctx, answerTimeout)
	s.sink.Refused(ctx, ChannelName, s.app.cfg.Name, check)
	cancel()
	if f != nil {
		s.answer(*f, channels.HTTPStatus(err), start)
	}
}

// answer acks f with {"code": code} and our handling time (biz_rt), as
// Feishu's SDK does; Feishu delivers the event again unless code is 200.
// It reports whether the ack was sent.
func (s *wsSession) answer(f Frame, code int, start time.Time) bool {
	return s.answerData(f, code, start, nil)
}

// ackPayload is an ack's payload as Feishu's SDK writes it: the code and,
// for a callback, the answer's JSON in data (bytes: base64 in JSON).
type ackPayload struct {
	Code int    `json:"code"`
	Data []byte `json:"data,omitempty"`
}

// answerData is answer with data, a callback's answer (a card tap's).
func (s *wsSession) answerData(f Frame, code int, start time.Time, data []byte) bool {
	ack := f
	ack.Headers = append(append([]Header(nil), f.Headers...), Header{HdrBizRT, strconv.FormatInt(time.Since(start).Milliseconds(), 10)})
	ack.Payload, _ = json.Marshal(ackPayload{Code: code, Data: data}) // ints and bytes always marshal
	ctx, cancel := context.WithTimeout(s.ctx, answerTimeout)
	defer cancel()
	if err := s.conn.Write(ctx, websocket.MessageBinary, ack.Marshal()); err != nil {
		s.app.log.Warn("feishu: ack not sent; Feishu delivers the event again", "code", code, "err", err)
		return false
	}
	return true
}

// pingLoop sends a ping now and every interval until ctx ends.
func (a *App) pingLoop(ctx context.Context, conn *websocket.Conn, serviceID int32, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ping := Frame{Service: serviceID, Method: FrameControl, Headers: []Header{{HdrType, TypePing}}}
		if err := conn.Write(ctx, websocket.MessageBinary, ping.Marshal()); err != nil {
			return // the reader notices the dead socket
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
