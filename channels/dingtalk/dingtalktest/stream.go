package dingtalktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/coder/websocket"
	"github.com/hermes-gw/hermes/channels/chantest"
)

// Topics of Stream mode: robot messages, and card callbacks (taps on a
// card's buttons).
const (
	BotTopic  = "/v1.0/im/bot/messages/get"
	CardTopic = "/v1.0/card/instances/callback"
)

// Ack is one frame answer a client sent.
type Ack struct {
	Code      int
	MessageID string
	Data      string
	Conn      int // which connection (1-based, in order of connecting)
}

// streamGateway is the fake Stream gateway: connections/open hands out
// single-use tickets, /connect upgrades to a WebSocket that pushes frames.
type streamGateway struct {
	s *Server

	mu      sync.Mutex
	tickets map[string][]string // ticket → the topics its connection subscribed
	conns   []*streamConn
	acks    []Ack
	pending map[string]pushed // messageId → CALLBACK frame not acked yet
	frames  map[string]pushed // messageId → every CALLBACK frame pushed
	nextID  int
	// callbacks counts the CALLBACK frames written, answered the acks of
	// them (WaitAnswered).
	callbacks, answered int
	changes             chantest.Changes // wakes WaitStream on every ack and connection
}

// pushed is a CALLBACK frame's topic and data.
type pushed struct {
	topic string
	data  []byte
}

type streamConn struct {
	n      int
	topics []string // the CALLBACK topics subscribed when it was opened
	remote string   // the client's address, to freeze its TCP connection
	ws     *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
}

func newStreamGateway(s *Server) *streamGateway {
	return &streamGateway{s: s, tickets: map[string][]string{}, pending: map[string]pushed{}, frames: map[string]pushed{}}
}

func (g *streamGateway) open(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "application/json") {
		// DingTalk answers XML unless asked for JSON.
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte("<OpenConnectionResponse><endpoint/></OpenConnectionResponse>"))
		return
	}
	var req struct {
		ClientID      string `json:"clientId"`
		ClientSecret  string `json:"clientSecret"`
		Subscriptions []struct{ Type, Topic string }
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ClientID != g.s.appKey || req.ClientSecret != g.s.appSecret {
		writeError(w, http.StatusUnauthorized, "InvalidAuthentication", "clientId or clientSecret invalid")
		return
	}
	var topics []string
	for _, sub := range req.Subscriptions {
		if sub.Type == "CALLBACK" {
			topics = append(topics, sub.Topic)
		}
	}
	// A connection takes the callbacks it subscribes: robot messages, card
	// taps, or both (the SDKs register either router alone).
	if len(topics) == 0 {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "no subscription")
		return
	}
	g.mu.Lock()
	g.nextID++
	ticket := fmt.Sprintf("ticket-%d", g.nextID)
	g.tickets[ticket] = topics
	g.mu.Unlock()
	writeJSON(w, map[string]string{"endpoint": "ws" + strings.TrimPrefix(g.s.srv.URL, "http") + "/connect", "ticket": ticket})
}

func (g *streamGateway) connect(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	topics, ok := g.tickets[r.URL.Query().Get("ticket")]
	delete(g.tickets, r.URL.Query().Get("ticket"))
	g.mu.Unlock()
	if !ok {
		http.Error(w, "invalid ticket", http.StatusUnauthorized)
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &streamConn{ws: ws, ctx: ctx, cancel: cancel, remote: r.RemoteAddr, topics: topics}
	g.mu.Lock()
	g.conns = append(g.conns, c)
	c.n = len(g.conns)
	g.notifyLocked()
	g.mu.Unlock()
	defer cancel()
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			cancel()
			g.mu.Lock()
			g.notifyLocked()
			g.mu.Unlock()
			return
		}
		var a struct {
			Code    int
			Headers map[string]string
			Data    string
		}
		if json.Unmarshal(data, &a) != nil {
			continue
		}
		g.mu.Lock()
		id := a.Headers["messageId"]
		if a.Code == http.StatusOK {
			delete(g.pending, id)
		}
		frame := g.frames[id]
		g.mu.Unlock()
		if a.Code == http.StatusOK && frame.topic == CardTopic {
			// DingTalk redraws the card with the answer before the ack counts.
			g.s.applyAnswer(frame, a.Data)
		}
		g.mu.Lock()
		g.acks = append(g.acks, Ack{Code: a.Code, MessageID: id, Data: a.Data, Conn: c.n})
		if _, ok := g.frames[id]; ok {
			g.answered++
		}
		g.notifyLocked()
		g.mu.Unlock()
	}
}

func (g *streamGateway) notifyLocked() { g.changes.Broadcast() }

func (g *streamGateway) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		c.cancel()
		_ = c.ws.CloseNow()
	}
}

// live is the newest connection still open.
func (g *streamGateway) live() (*streamConn, error) {
	return g.liveFor("")
}

// liveFor is the newest connection still open that subscribed topic (any,
// for "").
func (g *streamGateway) liveFor(topic string) (*streamConn, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := len(g.conns) - 1; i >= 0; i-- {
		if c := g.conns[i]; c.ctx.Err() == nil && (topic == "" || slices.Contains(c.topics, topic)) {
			return c, nil
		}
	}
	return nil, fmt.Errorf("dingtalktest: no live stream connection subscribed to %q", topic)
}

func (g *streamGateway) push(ctx context.Context, typ, topic, id, data string) error {
	sub := topic
	if typ != "CALLBACK" {
		sub = ""
	}
	c, err := g.liveFor(sub)
	if err != nil {
		return err
	}
	return g.pushOn(ctx, c, typ, topic, id, data)
}

// pushOn writes a frame on connection c.
func (g *streamGateway) pushOn(ctx context.Context, c *streamConn, typ, topic, id, data string) error {
	b, _ := json.Marshal(map[string]any{
		"specVersion": "1.0", "type": typ, "data": data,
		"headers": map[string]string{"topic": topic, "messageId": id, "contentType": "application/json", "time": "1700000000000"},
	})
	if typ == "CALLBACK" { // counted before its ack can arrive
		g.mu.Lock()
		g.callbacks++
		g.mu.Unlock()
	}
	err := c.ws.Write(ctx, websocket.MessageText, b)
	if err != nil && typ == "CALLBACK" {
		g.mu.Lock()
		g.callbacks--
		g.mu.Unlock()
	}
	return err
}

// WaitAnswered waits until every CALLBACK frame written so far has been
// acked (a frame pushed again is acked again), or ctx ends.
func (s *Server) WaitAnswered(ctx context.Context) error {
	g := s.stream
	return g.changes.Wait(ctx, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.answered >= g.callbacks
	})
}

// PushCallback pushes a robot message (its JSON) on the newest live
// connection as a CALLBACK frame and returns the frame's messageId.
func (s *Server) PushCallback(ctx context.Context, data []byte) (string, error) {
	g := s.stream
	g.mu.Lock()
	g.nextID++
	id := fmt.Sprintf("frame-%d", g.nextID)
	g.pending[id] = pushed{topic: BotTopic, data: data}
	g.frames[id] = g.pending[id]
	g.mu.Unlock()
	return id, g.push(ctx, "CALLBACK", BotTopic, id, string(data))
}

// Redeliver pushes every CALLBACK frame not acked with 200 again, as
// DingTalk does about a minute later; it returns their messageIds.
func (s *Server) Redeliver(ctx context.Context) ([]string, error) {
	g := s.stream
	g.mu.Lock()
	again := make(map[string]pushed, len(g.pending))
	for id, d := range g.pending {
		again[id] = d
	}
	g.mu.Unlock()
	var ids []string
	for id, d := range again {
		if err := g.push(ctx, "CALLBACK", d.topic, id, string(d.data)); err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Ping pushes a SYSTEM ping frame with data; the client must echo it.
func (s *Server) Ping(ctx context.Context, id, data string) error {
	return s.stream.push(ctx, "SYSTEM", "ping", id, data)
}

// Disconnect pushes a SYSTEM disconnect frame, then closes that
// connection, as DingTalk does before moving a client.
func (s *Server) Disconnect(ctx context.Context) error {
	c, err := s.stream.live()
	if err != nil {
		return err
	}
	if err := s.stream.push(ctx, "SYSTEM", "disconnect", "disconnect-1", `{"reason":"server restart"}`); err != nil {
		return err
	}
	c.cancel()
	// The socket may be closing already: the robot leaves on the frame,
	// and the read loop closes it once its context ends. Either way the
	// connection is over, which is all Disconnect promises.
	if err := c.ws.Close(websocket.StatusNormalClosure, "disconnect"); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Silence makes the newest connection go silent without closing, like a
// path that black-holes packets: whatever the server writes on it (pongs,
// frames) is dropped.
func (s *Server) Silence() error {
	c, err := s.stream.live()
	if err != nil {
		return err
	}
	s.freeze(c.remote)
	return nil
}

// Acks returns the frame answers received so far.
func (s *Server) Acks() []Ack {
	g := s.stream
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Ack(nil), g.acks...)
}

// Connections counts WebSocket connections made so far, and the live ones.
func (s *Server) Connections() (made, live int) {
	g := s.stream
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.conns {
		if c.ctx.Err() == nil {
			live++
		}
	}
	return len(g.conns), live
}

// WaitStream waits until cond holds over the acks and connection counts,
// or ctx ends.
func (s *Server) WaitStream(ctx context.Context, cond func(acks []Ack, made, live int) bool) error {
	g := s.stream
	var acks []Ack
	var made, live int
	err := g.changes.Wait(ctx, func() bool {
		made, live = s.Connections()
		g.mu.Lock()
		acks = append([]Ack(nil), g.acks...)
		g.mu.Unlock()
		return cond(acks, made, live)
	})
	if err != nil {
		return fmt.Errorf("dingtalktest: stream condition not met (%d acks, %d/%d connections): %w", len(acks), live, made, err)
	}
	return nil
}
