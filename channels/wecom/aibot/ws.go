package aibot

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/guard"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// botTiming are the long connection's intervals. The defaults mirror the
// official SDK (@wecom/aibot-node-sdk); tests shorten them.
type botTiming struct {
	// Ping is the heartbeat interval, default 30s.
	Ping time.Duration
	// MissedPings unanswered in a row mean a dead socket, default 2.
	MissedPings int
	// AckTimeout is how long a frame waits for its ack, default 5s.
	AckTimeout time.Duration
	// Poll is how often a stream reads the run's progress, default 500ms.
	Poll time.Duration
	// Dial bounds connecting and the websocket handshake, default 10s.
	Dial time.Duration
	// ResponseURL bounds one POST to a response_url, answer included,
	// default 10s.
	ResponseURL time.Duration
	// Media bounds one attachment's download from WeCom's media URL,
	// default 60s: a 20 MB file needs it on a slow link.
	Media time.Duration
	// Backoff paces the reconnects (channels.Reconnect); the zero value is
	// channels.DefaultBackoff, whose 1 s → … → 30 s mirrors the SDK's.
	Backoff channels.Backoff
}

func defaultBotTiming() botTiming {
	return botTiming{
		Ping:        30 * time.Second,
		MissedPings: 2,
		AckTimeout:  5 * time.Second,
		Poll:        500 * time.Millisecond,
		Dial:        10 * time.Second,
		ResponseURL: 10 * time.Second,
		Media:       wxbiz.MediaTimeout,
	}
}

var (
	// errSubscribeRefused: WeCom answered aibot_subscribe with an errcode,
	// most often wrong bot_id or secret (853000).
	errSubscribeRefused = fmt.Errorf("subscription refused: fix bot_id / secret in the configuration: %w", channels.ErrCredentials)
	// errHandlerPanicked: a frame's handler panicked (counted and logged
	// where it was recovered), which ends the connection.
	errHandlerPanicked = errors.New("a frame's handler panicked")
)

// panicHook is for tests only, unset otherwise: it runs on every callback
// frame, on the read loop (stage "read") and in the frame's handler
// ("handle"), so that a test can make either panic as a hostile frame
// might.
var panicHook atomic.Pointer[func(stage string, body []byte)]

func testHook(stage string, body []byte) {
	if h := panicHook.Load(); h != nil {
		(*h)(stage, body)
	}
}

type subscribeBody struct {
	BotID  string `json:"bot_id"`
	Secret string `json:"secret"`
}

// run is one session of the bot's long connection (channels.Connection.Run):
// dial, subscribe, then read frames and ping until the socket dies. It
// returns once every message it was handling is done with. Errors wrap
// channels.ErrTakenOver (WeCom says a newer connection took the bot: do
// not reconnect against it), channels.ErrCredentials (the subscription was
// refused), guard.ErrPanic, or say how the socket died.
func (b *Bot) run(ctx context.Context, sink channels.Sink) error {
	var handlers sync.WaitGroup
	defer handlers.Wait()
	if err := b.session(ctx, sink, &handlers); err != nil {
		return fmt.Errorf("wecom: bot %q: %w", b.name, err)
	}
	return nil
}

// session dials, subscribes and serves one socket.
func (b *Bot) session(ctx context.Context, sink channels.Sink, handlers *sync.WaitGroup) (err error) {
	dctx, cancel := context.WithTimeout(ctx, b.timing.Dial)
	ws, _, err := websocket.Dial(dctx, b.url, nil)
	cancel()
	if err != nil {
		return fmt.Errorf("dial %s: %w", b.url, err)
	}
	conn := newBotConn(ws, b.timing.AckTimeout)
	sctx, stop := context.WithCancel(ctx)
	defer func() {
		stop()
		conn.close()
		<-conn.done
		// What ended the read loop outranks what the pinger saw of it (a
		// write on the closing socket): WeCom's takeover, or a panic.
		if errors.Is(conn.err, channels.ErrTakenOver) || errors.Is(conn.err, guard.ErrPanic) {
			err = conn.err
		}
	}()
	// A callback may follow the subscription's ack at once, on the same
	// read loop, while this goroutine is still between the ack and making
	// the connection live: the callback waits for that, or its reply would
	// find no live connection here and go as a message instead of a
	// stream. Acks are routed before handle, so the ack itself never waits.
	subscribed := make(chan struct{})
	go conn.readLoop(sctx, func(f botFrameIn) error {
		select {
		case <-subscribed:
		case <-sctx.Done():
			return sctx.Err()
		}
		return b.dispatch(ctx, conn, sink, f, handlers)
	})

	ack, err := conn.request(sctx, botCmdSubscribe, newReqID(), subscribeBody{BotID: b.botID, Secret: b.secret})
	if errors.Is(err, errSocketClosed) {
		<-conn.done
		return conn.err // e.g. channels.ErrTakenOver
	}
	if err != nil {
		return err
	}
	if ack.ErrCode != 0 {
		return fmt.Errorf("%w: bot_id %s: errcode %d: %s", errSubscribeRefused, b.botID, ack.ErrCode, ack.ErrMsg)
	}
	b.live.Store(conn)
	defer b.live.CompareAndSwap(conn, nil)
	close(subscribed)
	b.log.Info("wecom bot: long connection subscribed", "url", b.url)
	return b.keepAlive(sctx, conn)
}

// keepAlive pings every Ping interval until MissedPings pings in a row go
// unanswered (a dead socket: WeCom or a middlebox dropped it silently) or
// the socket ends.
func (b *Bot) keepAlive(ctx context.Context, conn *botConn) error {
	ticker := time.NewTicker(b.timing.Ping)
	defer ticker.Stop()
	missed := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-conn.done:
			return conn.err
		case <-ticker.C:
		}
		_, err := conn.requestWithin(ctx, botCmdPing, newReqID(), nil, min(b.timing.AckTimeout, b.timing.Ping))
		switch {
		case err == nil:
			missed = 0
		case errors.Is(err, errAckTimeout):
			if missed++; missed >= b.timing.MissedPings {
				return fmt.Errorf("%d pings unanswered: dead socket", missed)
			}
		case errors.Is(err, errSocketClosed):
			<-conn.done
			return conn.err
		default:
			return err
		}
	}
}

// dispatch routes a callback frame. It runs on the read loop, so the work
// (sink.Accept, the stream) runs in its own goroutine; handlers tracks it.
// Message work uses ctx, the connection's lifetime, not the socket's: a
// message received is stored even if the socket dies meanwhile.
func (b *Bot) dispatch(ctx context.Context, conn *botConn, sink channels.Sink, f botFrameIn, handlers *sync.WaitGroup) error {
	testHook("read", f.Body)
	m, err := route(f)
	switch {
	case errors.Is(err, channels.ErrTakenOver):
		return err
	case err != nil:
		b.log.Warn("wecom bot: undecodable callback frame", "cmd", f.Cmd, "req_id", f.Headers.ReqID, "err", err)
		return nil
	case m == nil:
		b.log.Debug("wecom bot: ignoring frame", "cmd", f.Cmd)
		return nil
	}
	handlers.Add(1)
	go func() {
		defer handlers.Done()
		// The handler works on what the peer sent: a panic in it ends this
		// connection (which is made again), not the process.
		err := guard.Run(func() error {
			b.handleFrame(ctx, conn, sink, f.Headers.ReqID, m, f.Body)
			return nil
		})
		if b.env.CountPanic(wxbiz.ChannelName, b.name, err) {
			b.log.Error("wecom bot: recovered a panic handling a frame; closing the long connection",
				"msg_id", m.MsgID, "req_id", f.Headers.ReqID, "err", err)
			conn.fail(errHandlerPanicked)
		}
	}()
	return nil
}

// route says what a frame WeCom pushed asks of the bot: nothing (nil, nil:
// not a callback), to stand back (channels.ErrTakenOver), or to handle a
// message. The takeover is recognised before anything else is asked of
// the frame: disconnected_event names no user, and a bot that misread it
// would reconnect and fight the connection that took it over.
//
// Errors otherwise wrap wxbiz.ErrMalformed.
func route(f botFrameIn) (*botMessage, error) {
	switch f.Cmd {
	case botCmdEventCallback:
		if takesOver(f.Body) {
			return nil, channels.ErrTakenOver
		}
	case botCmdMsgCallback:
	default:
		return nil, nil
	}
	m, err := parseBotMessage(f.Body)
	if err == nil && m.MsgType == botTypeStream {
		// Refreshes are callback mode's: here Hermes pushes the stream.
		return nil, fmt.Errorf("%w: stream refresh on the long connection", wxbiz.ErrMalformed)
	}
	return m, err
}

// handleFrame stores a message and, only then, answers it on the socket
// (the welcome; the answer's stream is the gateway's live reply, which
// Accept starts: live.go).
func (b *Bot) handleFrame(ctx context.Context, conn *botConn, sink channels.Sink, reqID string, m *botMessage, body []byte) {
	testHook("handle", body)
	err := b.answerFrame(ctx, conn, sink, reqID, m, body)
	switch {
	case errors.Is(err, channels.ErrUnavailable) || errors.Is(err, wxbiz.ErrMalformed):
		// Nothing tells WeCom to push the frame again: the message is lost.
		b.log.Error("wecom bot: message not stored", "msg_id", m.MsgID, "req_id", reqID, "err", err)
	case err != nil:
		b.log.Warn("wecom bot: message not answered on the socket", "msg_id", m.MsgID, "req_id", reqID, "err", err)
	}
}

func (b *Bot) answerFrame(ctx context.Context, conn *botConn, sink channels.Sink, reqID string, m *botMessage, body []byte) error {
	if m.isClick() {
		return b.answerTap(ctx, conn, sink, reqID, m, body)
	}
	_, answer, err := b.accept(ctx, sink, m, body, reqID)
	if err != nil {
		return fmt.Errorf("not stored: %w", err)
	}
	if answer != answerWelcome {
		return nil
	}
	ack, err := conn.request(ctx, botCmdRespondWelcome, reqID, textReply(b.msgs.Welcome))
	if err == nil {
		err = ack.result().err(botCmdRespondWelcome)
	}
	if err != nil {
		return fmt.Errorf("welcome: %w", err)
	}
	return nil
}

// answerTap takes a tap on a card (the sink stores it durably, once) and
// only then redraws the card with aibot_respond_update_msg on the event's
// req_id, which that spends. A tap that changes nothing gets no frame.
func (b *Bot) answerTap(ctx context.Context, conn *botConn, sink channels.Sink, reqID string, m *botMessage, body []byte) error {
	update, err := b.acceptClick(ctx, sink, m, body, reqID)
	if err != nil {
		return fmt.Errorf("tap not stored: %w", err)
	}
	if update == nil {
		return nil
	}
	ack, err := conn.request(ctx, botCmdRespondUpdate, reqID, update)
	if err == nil {
		err = ack.result().err(botCmdRespondUpdate)
	}
	if err != nil {
		return fmt.Errorf("tap's card update: %w", err)
	}
	return nil
}
