package wecomtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/hermes-gw/hermes/channels/chantest"
)

// BadCredentials is the errcode the fake answers aibot_subscribe with for
// a wrong bot_id or secret (853000, as third parties report WeCom's).
const BadCredentials = 853000

// Subscription is one aibot_subscribe the fake received.
type Subscription struct {
	Conn  int // which connection, 1-based in accept order
	BotID string
	OK    bool // the credentials matched
	At    time.Time
}

// BotFrame is one frame a bot sent besides subscribe and ping:
// aibot_respond_msg, aibot_respond_welcome_msg, aibot_send_msg,
// aibot_respond_update_msg.
type BotFrame struct {
	Conn  int
	Cmd   string
	ReqID string
	Body  json.RawMessage
	Reply BotReply // Body decoded
	At    time.Time
}

// BotWSServer fakes WeCom's AI bot long-connection gateway
// (wss://openws.work.weixin.qq.com): it checks aibot_subscribe
// credentials, acks pings (SetPingAcks(false) stops that, as a dead
// socket would), pushes callbacks to the newest subscribed connection,
// and acks and records the bot's frames. Like WeCom, it keeps one
// connection per bot: a new subscription evicts the previous connection
// with a disconnected_event.
type BotWSServer struct {
	srv           *httptest.Server
	botID, secret string
	ctx           context.Context
	cancel        context.CancelFunc

	mu       sync.Mutex
	pingAcks bool
	conns    int
	current  *fakeBotConn // the newest subscribed connection
	subs     []Subscription
	frames   []BotFrame
	failCmd  map[string]int // cmd → errcode for the next such frame
	// events are the req_ids of the events pushed whose answer
	// (aibot_respond_update_msg) is still to come: one each.
	events  map[string]bool
	uploads botUploads // media uploaded over the socket (aibot/media.go)
	changed chantest.Changes
}

type fakeBotConn struct {
	n   int
	ws  *websocket.Conn
	wmu sync.Mutex
}

func (c *fakeBotConn) write(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// NewBotWSServer starts a fake gateway for one bot; t.Cleanup closes it.
func NewBotWSServer(t testing.TB, botID, secret string) *BotWSServer {
	s := &BotWSServer{botID: botID, secret: secret, pingAcks: true, failCmd: map[string]int{}, events: map[string]bool{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(func() {
		s.cancel()
		s.srv.Close()
	})
	return s
}

// URL is the ws:// address to configure as the bot's url.
func (s *BotWSServer) URL() string { return "ws" + strings.TrimPrefix(s.srv.URL, "http") }

// SetPingAcks turns ping acks on (the default) or off.
func (s *BotWSServer) SetPingAcks(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pingAcks = on
}

// DropConnection, given to FailNext, records the next frame with cmd and
// then closes the connection without acking it, as when the ack is lost:
// the client cannot tell whether WeCom acted on the frame.
const DropConnection = -1

// FailNext makes the next frame with cmd be acked with errcode (or, with
// DropConnection, not acked at all). A cmd of a message may name its
// msgtype too: "aibot_send_msg:image".
func (s *BotWSServer) FailNext(cmd string, errcode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCmd[cmd] = errcode
}

// Subscriptions returns the aibot_subscribe frames received so far.
func (s *BotWSServer) Subscriptions() []Subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Subscription(nil), s.subs...)
}

// Frames returns the bot's frames received so far (not subscribe, not
// ping).
func (s *BotWSServer) Frames() []BotFrame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]BotFrame(nil), s.frames...)
}

// WaitSubscriptions blocks until at least n subscriptions (ok ones only,
// when ok) were received, or ctx ends.
func (s *BotWSServer) WaitSubscriptions(ctx context.Context, n int, ok bool) ([]Subscription, error) {
	var got []Subscription
	err := s.wait(ctx, func() bool {
		got = got[:0]
		for _, sub := range s.subs {
			if sub.OK || !ok {
				got = append(got, sub)
			}
		}
		return len(got) >= n
	})
	if err != nil {
		return got, fmt.Errorf("wecomtest: %d subscriptions, want %d: %w", len(got), n, err)
	}
	return got, nil
}

// WaitFrame blocks until a frame matching match was received and returns
// the first such, or ctx ends.
func (s *BotWSServer) WaitFrame(ctx context.Context, match func(BotFrame) bool) (BotFrame, error) {
	var found BotFrame
	err := s.wait(ctx, func() bool {
		for _, f := range s.frames {
			if match(f) {
				found = f
				return true
			}
		}
		return false
	})
	if err != nil {
		return BotFrame{}, fmt.Errorf("wecomtest: no matching frame among %d: %w", len(s.Frames()), err)
	}
	return found, nil
}

// wait calls cond under the lock on every change until it holds.
func (s *BotWSServer) wait(ctx context.Context, cond func() bool) error {
	return waitUntil(ctx, &s.mu, &s.changed, cond)
}

// PushMessage sends an aibot_msg_callback with body (a BotMessage's JSON)
// to the newest subscribed connection and returns its req_id.
func (s *BotWSServer) PushMessage(ctx context.Context, body []byte) (string, error) {
	return s.push(ctx, "aibot_msg_callback", body)
}

// PushEvent sends an aibot_event_callback (BotMessage.Event's JSON).
func (s *BotWSServer) PushEvent(ctx context.Context, body []byte) (string, error) {
	return s.push(ctx, "aibot_event_callback", body)
}

// Disconnect tells the newest connection that a newer one took over
// (disconnected_event), as WeCom does before closing it.
func (s *BotWSServer) Disconnect(ctx context.Context) error {
	_, err := s.PushEvent(ctx, s.disconnectedEvent())
	return err
}

// TakeOver does what WeCom does when another client subscribes the bot:
// it sends the newest connection a disconnected_event and closes it.
func (s *BotWSServer) TakeOver() error {
	s.mu.Lock()
	c := s.current
	s.current = nil
	s.mu.Unlock()
	if c == nil {
		return errors.New("wecomtest: no subscribed connection")
	}
	s.evict(c)
	return nil
}

func (s *BotWSServer) disconnectedEvent() []byte {
	return DisconnectedEvent("disc-"+randomHex(), s.botID, time.Now().Unix())
}

// evict tells a connection replaced by a newer subscription so, then
// closes it, as WeCom allows one connection per bot.
func (s *BotWSServer) evict(c *fakeBotConn) {
	reqID := "aibot_event_callback_" + randomHex()
	_ = c.write(s.ctx, map[string]any{"cmd": "aibot_event_callback", "headers": map[string]string{"req_id": reqID},
		"body": json.RawMessage(s.disconnectedEvent())})
	_ = c.ws.Close(websocket.StatusNormalClosure, "taken over")
}

func (s *BotWSServer) push(ctx context.Context, cmd string, body []byte) (string, error) {
	s.mu.Lock()
	c := s.current
	s.mu.Unlock()
	if c == nil {
		return "", errors.New("wecomtest: no subscribed connection")
	}
	reqID := cmd + "_" + randomHex()
	if cmd == "aibot_event_callback" {
		s.mu.Lock()
		s.events[reqID] = true
		s.mu.Unlock()
	}
	return reqID, c.write(ctx, map[string]any{"cmd": cmd, "headers": map[string]string{"req_id": reqID}, "body": json.RawMessage(body)})
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *BotWSServer) handle(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ws.SetReadLimit(1 << 20)
	s.mu.Lock()
	s.conns++
	c := &fakeBotConn{n: s.conns, ws: ws}
	s.mu.Unlock()
	defer ws.CloseNow()
	for {
		_, data, err := ws.Read(s.ctx)
		if err != nil {
			return
		}
		var f struct {
			Cmd     string `json:"cmd"`
			Headers struct {
				ReqID string `json:"req_id"`
			} `json:"headers"`
			Body json.RawMessage `json:"body"`
		}
		if json.Unmarshal(data, &f) != nil {
			return
		}
		code, ackBody, keep := s.receive(c, f.Cmd, f.Headers.ReqID, f.Body)
		if code >= 0 {
			msg := "ok"
			if code != 0 {
				msg = "fake error"
			}
			ack := map[string]any{"headers": map[string]string{"req_id": f.Headers.ReqID}, "errcode": code, "errmsg": msg}
			if ackBody != nil {
				ack["body"] = ackBody
			}
			_ = c.write(s.ctx, ack)
		}
		if f.Cmd == "aibot_subscribe" && code == 0 {
			s.subscribed(c)
		}
		if !keep {
			return
		}
	}
}

// subscribed records c's acked subscription and makes it the connection
// callbacks go to, evicting the previous one.
func (s *BotWSServer) subscribed(c *fakeBotConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed.Broadcast()
	s.subs = append(s.subs, Subscription{Conn: c.n, BotID: s.botID, OK: true, At: time.Now()})
	if prev := s.current; prev != nil && prev != c {
		go s.evict(prev)
	}
	s.current = c
}

// receive records a frame and says how to ack it (code < 0: no ack; the
// ack's body, if any) and whether to keep the connection.
func (s *BotWSServer) receive(c *fakeBotConn, cmd, reqID string, body json.RawMessage) (code int, ackBody any, keep bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed.Broadcast()
	switch cmd {
	case "aibot_subscribe":
		var cred struct {
			BotID  string `json:"bot_id"`
			Secret string `json:"secret"`
		}
		_ = json.Unmarshal(body, &cred)
		if cred.BotID != s.botID || cred.Secret != s.secret {
			s.subs = append(s.subs, Subscription{Conn: c.n, BotID: cred.BotID, OK: false, At: time.Now()})
			return BadCredentials, nil, false
		}
		// Recorded, and made the connection callbacks go to, once the ack
		// is written (subscribed): WeCom sends no callback on a connection
		// before acking its subscription, and a test that pushes as soon
		// as it sees the subscription must not get ahead of the ack.
		return 0, nil, true
	case "ping":
		if !s.pingAcks {
			return -1, nil, true
		}
		return 0, nil, true
	case cmdUploadInit, cmdUploadChunk, cmdUploadFinish:
		if code := s.failCmd[cmd]; code != 0 {
			delete(s.failCmd, cmd)
			return code, nil, true
		}
		code, ackBody := s.uploads.receive(cmd, body)
		return code, ackBody, true
	}
	f := BotFrame{Conn: c.n, Cmd: cmd, ReqID: reqID, Body: body, At: time.Now()}
	_ = json.Unmarshal(body, &f.Reply)
	s.frames = append(s.frames, f)
	for _, key := range []string{cmd + ":" + f.Reply.MsgType, cmd} {
		if code := s.failCmd[key]; code != 0 {
			delete(s.failCmd, key)
			return code, nil, code != DropConnection
		}
	}
	switch {
	case f.Reply.MsgType == "image" && !s.uploads.knows(f.Reply.Image.MediaID):
		return codeUnknownMedia, nil, true
	case cmd == "aibot_respond_update_msg":
		// One answer per event, on the event's req_id (846605 after).
		if !s.events[reqID] {
			return CodeReqIDSpent, nil, true
		}
		delete(s.events, reqID)
		if f.Reply.ResponseType != "update_template_card" || cardProblem(f.Reply.TemplateCard) != "" {
			return CodeBadCard, nil, true
		}
	case f.Reply.MsgType == "template_card" && cardProblem(f.Reply.TemplateCard) != "":
		return CodeBadCard, nil, true
	}
	return 0, nil, true
}

// CodeReqIDSpent is WeCom's errcode for a second answer on one event's
// req_id, or one on a req_id it never sent (846605, as the
// wecom-openclaw-plugin reports it).
const CodeReqIDSpent = 846605
