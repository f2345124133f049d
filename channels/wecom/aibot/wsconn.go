package aibot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/hermes-gw/hermes/channels/guard"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// Long-connection commands (frames are JSON text: {cmd, headers:{req_id},
// body}), as the official @wecom/aibot-node-sdk speaks them.
const (
	botCmdSubscribe      = "aibot_subscribe"
	botCmdPing           = "ping"
	botCmdMsgCallback    = "aibot_msg_callback"
	botCmdEventCallback  = "aibot_event_callback"
	botCmdRespond        = "aibot_respond_msg"
	botCmdRespondWelcome = "aibot_respond_welcome_msg"
	botCmdSendMsg        = "aibot_send_msg"
	// botCmdRespondUpdate redraws a tapped card, on the tap's req_id,
	// once (a second use is refused: 846605), within 5 s.
	botCmdRespondUpdate = "aibot_respond_update_msg"
)

// maxFrameBytes bounds one inbound frame; messages with quotes or mixed
// items are a few KiB (coder/websocket's default limit is 32 KiB).
const maxFrameBytes = 1 << 20

type botHeaders struct {
	ReqID string `json:"req_id"`
}

// botFrameOut is a frame Hermes sends.
type botFrameOut struct {
	Cmd     string     `json:"cmd"`
	Headers botHeaders `json:"headers"`
	Body    any        `json:"body,omitempty"`
}

// botFrameIn is a frame WeCom sends: a callback (with cmd) or the ack of
// one of ours (no cmd; the echoed req_id says which).
type botFrameIn struct {
	Cmd     string          `json:"cmd"`
	Headers botHeaders      `json:"headers"`
	Body    json.RawMessage `json:"body"`
	ErrCode int64           `json:"errcode"`
	ErrMsg  string          `json:"errmsg"`
}

func (f botFrameIn) result() botResult { return botResult{ErrCode: f.ErrCode, ErrMsg: f.ErrMsg} }

var (
	// errAckTimeout: WeCom did not ack a frame in time.
	errAckTimeout = errors.New("no ack from WeCom in time")
	// errSocketClosed: the socket went down while a frame waited for its ack.
	errSocketClosed = errors.New("long connection closed")
)

// botConn is one websocket to WeCom: frames are written one at a time
// (coder/websocket allows a single concurrent writer) and acks are matched
// to the request waiting for them by req_id.
type botConn struct {
	ws         *websocket.Conn
	ackTimeout time.Duration

	wmu sync.Mutex // one writer at a time

	mu      sync.Mutex
	waiting map[string]chan botFrameIn // req_id → the request awaiting its ack
	cause   error                      // why fail ended the connection, if it did
	ended   bool                       // the read loop has settled err

	done chan struct{} // closed when the read loop ends
	err  error         // why it ended; set before done is closed
}

func newBotConn(ws *websocket.Conn, ackTimeout time.Duration) *botConn {
	ws.SetReadLimit(maxFrameBytes)
	return &botConn{ws: ws, ackTimeout: ackTimeout, waiting: map[string]chan botFrameIn{}, done: make(chan struct{})}
}

// newReqID returns a fresh req_id for a frame Hermes starts.
func newReqID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// request sends one frame and waits (ackTimeout) for the ack that echoes
// its req_id. Frames on one req_id must go one at a time: a second request
// on a req_id still awaiting its ack fails.
//
// Errors: errAckTimeout, errSocketClosed, ctx's error, a write failure.
// WeCom's errcode is in the returned ack, not in the error.
func (c *botConn) request(ctx context.Context, cmd, reqID string, body any) (botFrameIn, error) {
	return c.requestWithin(ctx, cmd, reqID, body, c.ackTimeout)
}

func (c *botConn) requestWithin(ctx context.Context, cmd, reqID string, body any, timeout time.Duration) (botFrameIn, error) {
	data, err := json.Marshal(botFrameOut{Cmd: cmd, Headers: botHeaders{ReqID: reqID}, Body: body})
	if err != nil {
		return botFrameIn{}, fmt.Errorf("%s: %w", cmd, err)
	}
	acked := make(chan botFrameIn, 1)
	c.mu.Lock()
	if _, busy := c.waiting[reqID]; busy {
		c.mu.Unlock()
		return botFrameIn{}, fmt.Errorf("%s: req_id %s still awaits an ack", cmd, reqID)
	}
	c.waiting[reqID] = acked
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, reqID)
		c.mu.Unlock()
	}()

	if err := c.write(ctx, data); err != nil {
		return botFrameIn{}, fmt.Errorf("%s: %w", cmd, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ack := <-acked:
		return ack, nil
	case <-timer.C:
		return botFrameIn{}, fmt.Errorf("%s: %w (%s)", cmd, errAckTimeout, timeout)
	case <-c.done:
		// The read loop hands an ack over before it ends: WeCom may ack
		// and close at once (a refused subscription).
		select {
		case ack := <-acked:
			return ack, nil
		default:
		}
		return botFrameIn{}, fmt.Errorf("%s: %w", cmd, errSocketClosed)
	case <-ctx.Done():
		return botFrameIn{}, fmt.Errorf("%s: %w", cmd, ctx.Err())
	}
}

func (c *botConn) write(ctx context.Context, data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.done:
		return errSocketClosed
	default:
	}
	return c.ws.Write(ctx, websocket.MessageText, data)
}

// readLoop reads frames until the socket fails or handle returns an
// error: acks go to the request awaiting them, other frames to handle,
// which must not block (acks are read by this same loop). It reads what a
// peer sent, so it runs under guard.Run: a panic on a frame ends this
// connection with an error wrapping guard.ErrPanic, never the process.
func (c *botConn) readLoop(ctx context.Context, handle func(botFrameIn) error) {
	err := guard.Run(func() error { return c.readFrames(ctx, handle) })
	c.mu.Lock()
	c.ended = true
	if c.cause != nil {
		err = c.cause // the socket failed because fail closed it
	}
	c.mu.Unlock()
	c.err = err
	close(c.done)
}

func (c *botConn) readFrames(ctx context.Context, handle func(botFrameIn) error) error {
	for {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		f, err := decodeFrame(data)
		if err != nil {
			continue // WeCom only sends JSON frames; skip what is not one
		}
		if f.Cmd == "" {
			c.mu.Lock()
			acked := c.waiting[f.Headers.ReqID]
			c.mu.Unlock()
			if acked != nil {
				select {
				case acked <- f:
				default: // a second ack for the same request
				}
			}
			continue
		}
		if err := handle(f); err != nil {
			return err
		}
	}
}

// decodeFrame parses one frame WeCom sent: a callback (with cmd) or an
// ack (without). Errors wrap wxbiz.ErrMalformed: not a JSON object of that shape.
func decodeFrame(data []byte) (botFrameIn, error) {
	var f botFrameIn
	if err := json.Unmarshal(data, &f); err != nil {
		return botFrameIn{}, fmt.Errorf("%w: long-connection frame: %v", wxbiz.ErrMalformed, err)
	}
	return f, nil
}

// fail ends the connection because of err, which becomes the read loop's
// error unless the loop had already ended.
func (c *botConn) fail(err error) {
	c.mu.Lock()
	if !c.ended && c.cause == nil {
		c.cause = err
	}
	c.mu.Unlock()
	c.close()
}

// close drops the socket; the read loop then ends.
func (c *botConn) close() { _ = c.ws.CloseNow() }
