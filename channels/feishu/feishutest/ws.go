package feishutest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/coder/websocket"

	"github.com/hermes-gw/hermes/channels/feishu"
)

// serviceID is the service id the fake puts into connection URLs.
const serviceID = 7

// Ack is one answer a client sent to a pushed event.
type Ack struct {
	MessageID string // the frame's message_id header
	Code      int    // payload {"code": ...}
	SeqID     uint64
	BizRT     string
	Data      []byte // a callback's answer (a card tap's), decoded from base64
}

// wsServer is the fake long-connection side of Server.
type wsServer struct {
	s         *Server
	endpoints int               // endpoint calls
	conns     []*websocket.Conn // every accepted socket, in order
	silent    map[*websocket.Conn]bool
	pings     int
	acks      []Ack
	nextSeq   uint64
}

func newWSServer(s *Server) *wsServer {
	return &wsServer{s: s, silent: map[*websocket.Conn]bool{}}
}

// handleEndpoint answers POST /callback/ws/endpoint with this server's
// socket URL, or a code and "data":{} for wrong credentials.
func (ws *wsServer) handleEndpoint(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AppID     string `json:"AppID"`
		AppSecret string `json:"AppSecret"`
	}
	_ = decode(r, &in)
	s := ws.s
	s.mu.Lock()
	ws.endpoints++
	s.notify()
	s.mu.Unlock()
	if in.AppID != s.appID || in.AppSecret != s.appSecret {
		answer(w, 200, 1000040343, "app id or secret invalid", map[string]any{"data": map[string]any{}})
		return
	}
	u := "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/ws?device_id=dev1&service_id=" + strconv.Itoa(serviceID)
	answer(w, 200, 0, "ok", map[string]any{"data": map[string]any{
		"URL": u,
		"ClientConfig": map[string]int{
			"ReconnectCount": -1, "ReconnectInterval": 120, "ReconnectNonce": 30, "PingInterval": 120,
		},
	}})
}

// handleSocket runs one client socket: pongs its pings (unless silenced)
// and records its acks.
func (ws *wsServer) handleSocket(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	s := ws.s
	s.mu.Lock()
	ws.conns = append(ws.conns, conn)
	s.notify()
	s.mu.Unlock()
	defer conn.CloseNow()
	ctx := r.Context()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		f, err := feishu.UnmarshalFrame(data)
		if err != nil {
			continue
		}
		s.mu.Lock()
		silent := ws.silent[conn]
		switch {
		case f.Method == feishu.FrameControl && f.Get(feishu.HdrType) == feishu.TypePing:
			ws.pings++
		case f.Method == feishu.FrameData:
			var p struct {
				Code int    `json:"code"`
				Data []byte `json:"data"`
			}
			_ = json.Unmarshal(f.Payload, &p)
			ws.acks = append(ws.acks, Ack{MessageID: f.Get(feishu.HdrMessageID), Code: p.Code, SeqID: f.SeqID, BizRT: f.Get(feishu.HdrBizRT), Data: p.Data})
		}
		s.notify()
		s.mu.Unlock()
		if f.Method == feishu.FrameControl && f.Get(feishu.HdrType) == feishu.TypePing && !silent {
			pong := feishu.Frame{Service: f.Service, Method: feishu.FrameControl, Headers: []feishu.Header{{Key: feishu.HdrType, Value: feishu.TypePong}},
				Payload: []byte(`{"ReconnectCount":-1,"ReconnectInterval":120,"ReconnectNonce":30,"PingInterval":120}`)}
			_ = conn.Write(ctx, websocket.MessageBinary, pong.Marshal())
		}
	}
}

// closeAll drops every socket (server shutdown).
func (ws *wsServer) closeAll() {
	ws.s.mu.Lock()
	conns := append([]*websocket.Conn(nil), ws.conns...)
	ws.s.mu.Unlock()
	for _, c := range conns {
		_ = c.CloseNow()
	}
}

// Connections counts the sockets clients opened so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ws.conns)
}

// EndpointCalls counts POST /callback/ws/endpoint calls.
func (s *Server) EndpointCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ws.endpoints
}

// Pings counts the pings received on all sockets.
func (s *Server) Pings() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ws.pings
}

// Acks returns the acks received, in order.
func (s *Server) Acks() []Ack {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Ack(nil), s.ws.acks...)
}

// Silence makes the newest socket stop answering: no pong, no frame, as a
// connection dead somewhere on the way would be.
func (s *Server) Silence() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.ws.conns); n > 0 {
		s.ws.silent[s.ws.conns[n-1]] = true
	}
}

// newest is the newest socket.
func (s *Server) newest() (*websocket.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ws.conns) == 0 {
		return nil, fmt.Errorf("feishutest: no connection to push to")
	}
	return s.ws.conns[len(s.ws.conns)-1], nil
}

// nextSeqID numbers the frames the fake sends.
func (s *Server) nextSeqID() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ws.nextSeq++
	return s.ws.nextSeq
}

// PushEvent sends payload (an event's JSON) on the newest socket as an
// event frame with the given message_id, split into fragments frames
// (sum/seq headers) when fragments > 1.
func (s *Server) PushEvent(ctx context.Context, messageID string, payload []byte, fragments int) error {
	fragments = max(fragments, 1)
	size := (len(payload) + fragments - 1) / fragments
	for i := 0; i < fragments; i++ {
		part := payload[min(i*size, len(payload)):min((i+1)*size, len(payload))]
		f := EventFrame(messageID, strconv.Itoa(fragments), strconv.Itoa(i), part)
		if err := s.PushFrame(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// EventFrame is an event frame as Feishu sends it, with the given
// message_id, sum and seq headers (any strings: a test's hostile ones
// too) and payload.
func EventFrame(messageID, sum, seq string, payload []byte) feishu.Frame {
	return feishu.Frame{
		Service: serviceID, Method: feishu.FrameData,
		Headers: []feishu.Header{
			{Key: feishu.HdrType, Value: feishu.TypeEvent},
			{Key: feishu.HdrMessageID, Value: messageID},
			{Key: feishu.HdrSum, Value: sum},
			{Key: feishu.HdrSeq, Value: seq},
			{Key: feishu.HdrTraceID, Value: "trace-" + messageID},
		},
		Payload: payload,
	}
}

// PushFrame sends f on the newest socket, numbered (SeqID, LogID) by the
// fake.
func (s *Server) PushFrame(ctx context.Context, f feishu.Frame) error {
	seq := s.nextSeqID()
	f.SeqID, f.LogID = seq, seq
	return s.PushBytes(ctx, f.Marshal())
}

// PushBytes sends b as one binary message on the newest socket, whatever
// it holds.
func (s *Server) PushBytes(ctx context.Context, b []byte) error {
	return s.push(ctx, websocket.MessageBinary, b)
}

// PushText sends a text message on the newest socket (Feishu sends only
// binary frames).
func (s *Server) PushText(ctx context.Context, text string) error {
	return s.push(ctx, websocket.MessageText, []byte(text))
}

func (s *Server) push(ctx context.Context, typ websocket.MessageType, b []byte) error {
	conn, err := s.newest()
	if err != nil {
		return err
	}
	if err := conn.Write(ctx, typ, b); err != nil {
		return fmt.Errorf("feishutest: push: %w", err)
	}
	return nil
}
