package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/guard"
)

// Stream mode: Hermes opens a connection with the app's credentials, then
// DingTalk pushes JSON frames over a WebSocket and waits for an ack per
// frame; an unacked frame is pushed again (about 60 s later).
const (
	botTopic        = "/v1.0/im/bot/messages/get"
	frameSystem     = "SYSTEM"
	frameCallback   = "CALLBACK"
	topicPing       = "ping"
	topicDisconnect = "disconnect"
	// maxFrameBytes bounds one frame; a robot message is a few KiB.
	maxFrameBytes = 1 << 20
)

// frame is a frame DingTalk pushes. Header values are strings.
type frame struct {
	SpecVersion string            `json:"specVersion"`
	Type        string            `json:"type"`
	Headers     map[string]string `json:"headers"`
	Data        string            `json:"data"`
}

// ack answers a frame; messageId repeats the frame's.
type ack struct {
	Code    int               `json:"code"`
	Headers map[string]string `json:"headers"`
	Message string            `json:"message"`
	Data    string            `json:"data"`
}

// errDisconnect: DingTalk asked the client to reconnect (a SYSTEM
// disconnect frame, e.g. before it moves the connection elsewhere).
var errDisconnect = fmt.Errorf("dingtalk: stream: server asked to reconnect: %w", channels.ErrReconnect)

// openConnection asks for a stream endpoint and its one-time ticket.
func (r *robot) openConnection(ctx context.Context) (string, error) {
	req := map[string]any{
		"clientId": r.cfg.AppKey, "clientSecret": r.cfg.AppSecret, "ua": "hermes",
		"subscriptions": r.subscriptions(),
	}
	var ans struct {
		Endpoint string `json:"endpoint"`
		Ticket   string `json:"ticket"`
	}
	if err := r.api.do(ctx, http.MethodPost, r.cfg.APIBaseURL+"/v1.0/gateway/connections/open", nil, req, &ans); err != nil {
		if e := (*APIError)(nil); errors.As(err, &e) && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) {
			err = fmt.Errorf("%w: %w", channels.ErrCredentials, err)
		}
		return "", fmt.Errorf("dingtalk: stream: open connection (check app_key and app_secret): %w", err)
	}
	if ans.Endpoint == "" || ans.Ticket == "" {
		return "", fmt.Errorf("dingtalk: stream: open connection: no endpoint or ticket in the answer")
	}
	return ans.Endpoint + "?ticket=" + url.QueryEscape(ans.Ticket), nil
}

// subscriptions are the topics the robot's connections take: robot
// messages (in stream mode), and card callbacks when it sends button cards
// (without the subscription DingTalk pushes no tap: cards.md trap 8).
func (r *robot) subscriptions() []map[string]string {
	var subs []map[string]string
	if r.cfg.Mode == ModeStream {
		subs = append(subs, map[string]string{"type": frameCallback, "topic": botTopic})
	}
	if r.cardsOn() {
		subs = append(subs, map[string]string{"type": frameCallback, "topic": cardTopic})
	}
	return subs
}

// runStream is one session of the robot's stream connection
// (channels.Connection.Run): it opens and dials a connection, reads
// frames, answers pings, hands robot messages to sink and acks each after
// Accept returned, and pings the socket after Keepalive without a frame,
// replacing it when the pong does not come within PingWait. The goroutines
// that read the peer's bytes (the reader, one per robot message) run under
// guard.Run: a panic in one becomes the error that ends this
// connection.
//
// Errors wrap channels.ErrCredentials (the open call refused app_key /
// app_secret), channels.ErrReconnect (a disconnect frame),
// guard.ErrPanic, or say how the connection failed.
func (r *robot) runStream(ctx context.Context, sink channels.Sink) error {
	u, err := r.openConnection(ctx)
	if err != nil {
		return err
	}
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: r.api.http})
	if err != nil {
		return fmt.Errorf("dingtalk: stream: dial: %w", redactURL(err))
	}
	conn.SetReadLimit(maxFrameBytes)
	r.log.Info("stream connected")

	connCtx, cancel := context.WithCancel(ctx)
	var inflight sync.WaitGroup
	defer func() {
		// Frames being stored still get their ack if the socket lives.
		inflight.Wait()
		cancel()
		_ = conn.Close(websocket.StatusNormalClosure, "")
	}()

	frames := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		err := guard.Run(func() error {
			for {
				_, data, err := conn.Read(connCtx)
				if err != nil {
					return err
				}
				select {
				case frames <- data:
				case <-connCtx.Done():
					return nil
				}
			}
		})
		if err != nil {
			readErr <- err
		}
	}()
	// broken receives the first panic of a frame's goroutine.
	broken := make(chan error, 1)

	// The ping runs beside the loop: frames keep being handled while it
	// waits, and the reader keeps reading, which is what receives the pong.
	idle := time.NewTimer(r.cfg.Keepalive)
	defer idle.Stop()
	pinged := make(chan error, 1)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			return fmt.Errorf("dingtalk: stream: read: %w", err)
		case err := <-broken:
			return fmt.Errorf("dingtalk: stream: robot message: %w", err)
		case <-idle.C:
			go func() {
				pctx, stop := context.WithTimeout(connCtx, r.cfg.PingWait)
				defer stop()
				err := conn.Ping(pctx)
				select {
				case pinged <- err:
				case <-connCtx.Done():
				}
			}()
		case err := <-pinged:
			if err != nil {
				return fmt.Errorf("dingtalk: stream: no frame for %s and no pong within %s: %w", r.cfg.Keepalive, r.cfg.PingWait, err)
			}
			idle.Reset(r.cfg.Keepalive)
		case data := <-frames:
			if !idle.Stop() {
				select {
				case <-idle.C:
				default:
				}
			}
			idle.Reset(r.cfg.Keepalive)
			if err := r.handleFrame(ctx, conn, data, sink, &inflight, broken); err != nil {
				return err
			}
		}
	}
}

// handleFrame answers one frame. A robot message or a card tap is stored
// on its own goroutine (reading goes on) and acked only after Accept
// returned; when Accept fails the frame is left unacked for DingTalk to
// push again. A panic on that goroutine leaves the frame unacked too, and
// is handed to broken, which ends the connection.
func (r *robot) handleFrame(ctx context.Context, conn *websocket.Conn, data []byte, sink channels.Sink, inflight *sync.WaitGroup, broken chan<- error) error {
	f, kind, err := decodeFrame(data)
	if err != nil {
		r.log.Warn("stream frame ignored", "err", err)
		return nil
	}
	id := f.Headers["messageId"]
	switch kind {
	case framePing:
		return r.writeAck(ctx, conn, id, f.Data)
	case frameDisconnect:
		return errDisconnect
	case frameMessage, frameCard:
		handle := r.handleMessage
		if kind == frameCard {
			handle = r.handleCard
		}
		received := time.Now()
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			err := guard.Run(func() error { handle(ctx, conn, id, f.Data, received, sink); return nil })
			if err != nil {
				select {
				case broken <- err:
				default: // the connection is ending already
				}
			}
		}()
		return nil
	default:
		// Nothing else is subscribed; ack so it is not pushed again.
		return r.writeAck(ctx, conn, id, "{}")
	}
}

// frameKind is what a frame asks of the client.
type frameKind int

const (
	frameOther      frameKind = iota // not subscribed: acked and dropped
	framePing                        // SYSTEM ping: echo its data
	frameDisconnect                  // SYSTEM disconnect: reconnect at once
	frameMessage                     // CALLBACK robot message: store, then ack
	frameCard                        // CALLBACK card tap: store, then ack with the card's answer (cardcallback.go)
)

// frameKinds maps a frame's type and topic to its kind.
var frameKinds = map[[2]string]frameKind{
	{frameSystem, topicPing}:       framePing,
	{frameSystem, topicDisconnect}: frameDisconnect,
	{frameCallback, botTopic}:      frameMessage,
	{frameCallback, cardTopic}:     frameCard,
}

// decodeFrame decodes one frame DingTalk pushed and says what it asks.
//
// Errors wrap ErrMalformed: not a JSON frame (header values must be
// strings).
func decodeFrame(data []byte) (frame, frameKind, error) {
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		return frame{}, frameOther, fmt.Errorf("%w: stream frame: %v", ErrMalformed, err)
	}
	return f, frameKinds[[2]string{f.Type, f.Headers["topic"]}], nil
}

// handleMessage stores the robot message data of frame id and acks the
// frame after Accept returned, unless it could not be stored.
func (r *robot) handleMessage(ctx context.Context, conn *websocket.Conn, id, data string, received time.Time, sink channels.Sink) {
	if r.onFrame != nil {
		r.onFrame(data)
	}
	err := r.receive(ctx, []byte(data), proof{}, sink)
	if errors.Is(err, channels.ErrUnavailable) || ctx.Err() != nil {
		r.log.Warn("robot message not stored; left unacked for DingTalk to push again", "message_id", id, "err", err)
		return
	}
	if err != nil {
		// A frame that cannot be decoded (or names another corp) never
		// will be accepted: ack it so it does not come back forever, and
		// count the refusal as a refused callback is counted.
		r.log.Warn("robot message refused", "message_id", id, "err", err)
		if check := channels.RefusalCheck(err); check != "" {
			sink.Refused(ctx, ChannelName, r.cfg.Name, check)
		}
	}
	if err := r.writeAck(ctx, conn, id, "{}"); err != nil {
		r.log.Warn("ack not sent; DingTalk will push the frame again", "message_id", id, "err", err)
		return
	}
	r.log.Debug("robot message acked", "message_id", id, "after", time.Since(received))
}

// writeAck acks the frame messageID with data.
func (r *robot) writeAck(ctx context.Context, conn *websocket.Conn, messageID, data string) error {
	b, err := json.Marshal(ack{
		Code: http.StatusOK, Message: "OK", Data: data,
		Headers: map[string]string{"contentType": "application/json", "messageId": messageID},
	})
	if err != nil {
		return fmt.Errorf("dingtalk: stream: ack: %w", err)
	}
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("dingtalk: stream: ack: %w", err)
	}
	return nil
}
