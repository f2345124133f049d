package feishutest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
)

// Codes the fake answers with, as Feishu does.
const (
	CodeTokenInvalid = 99991663
	CodeNoScope      = 99991672
	CodeBadSecret    = 10014
	CodeBadSequence  = 300317 // a CardKit sequence not above the last
	tokenExpire      = 7200
)

// Reply is one reply (or new message) the fake accepted.
type Reply struct {
	To string // the message replied to; empty for a new message
	// ReceiveIDType and ReceiveID address a new message (im/v1/messages).
	ReceiveIDType, ReceiveID string
	MsgType                  string
	Content                  string // as sent: a JSON string
	UUID                     string
	MessageID                string // the new message's id
	Duplicate                bool   // suppressed by uuid, not shown twice
	At                       time.Time
}

// Text is the reply's visible text: text, the post's md element, the
// card id for a streaming card, or a card's markdown.
func (r Reply) Text() string {
	var c struct {
		Text string `json:"text"`
		ZhCN struct {
			Content [][]struct {
				Tag, Text string
			} `json:"content"`
		} `json:"zh_cn"`
		Data struct {
			CardID string `json:"card_id"`
		} `json:"data"`
	}
	_ = json.Unmarshal([]byte(r.Content), &c)
	switch r.MsgType {
	case "post":
		var parts []string
		for _, p := range c.ZhCN.Content {
			for _, el := range p {
				parts = append(parts, el.Text)
			}
		}
		return strings.Join(parts, "\n")
	case "interactive":
		if c.Data.CardID == "" {
			return ParseCard(r.Content).Text
		}
		return "card:" + c.Data.CardID
	case "image":
		var img struct {
			ImageKey string `json:"image_key"`
		}
		_ = json.Unmarshal([]byte(r.Content), &img)
		return "image:" + img.ImageKey
	}
	return c.Text
}

// CardOp is one CardKit call on a card.
type CardOp struct {
	Kind     string // "content" or "settings"
	Sequence int
	Content  string // element content, or the settings JSON
	At       time.Time
}

// Card is one card entity created through the fake.
type Card struct {
	ID   string
	Data string // the card JSON as created
	Ops  []CardOp
}

// Server is a fake Feishu OpenAPI (and long-connection endpoint) for one
// app. Its methods are safe for concurrent use.
type Server struct {
	srv       *httptest.Server
	appID     string
	appSecret string
	BotOpenID string

	mu              sync.Mutex
	now             func() time.Time
	tokens          map[string]bool
	nextToken       int
	tokenRequests   int
	replies         []Reply
	uuids           map[string]Reply
	cards           map[string]*Card
	cardOrder       []string
	failCards       bool
	failMessages    int     // a code new messages (im/v1/messages) answer, 0 for none
	failInteractive int     // a code cards (msg_type interactive) answer, 0 for none
	patches         []Patch // card updates (interactive.go)
	departments     map[string][]string
	contactDenied   bool
	userGets        int
	calls           []string                  // "METHOD path" of every authorised call
	images          []Image                   // im/v1/images uploads (images.go)
	resources       map[string]*resource      // message resources by key (files.go)
	resourceGets    map[string]int            // requests per resource key
	stored          map[string]*storedMessage // messages GET im/v1/messages/:id reads
	messageGets     int
	changes         chantest.Changes // wakes WaitFor on every change

	ws *wsServer
}

// NewServer starts a fake for appID + appSecret; t.Cleanup closes it.
func NewServer(t testing.TB, appID, appSecret string) *Server {
	s := &Server{
		appID: appID, appSecret: appSecret, BotOpenID: "ou_bot_" + appID,
		now: time.Now, tokens: map[string]bool{}, uuids: map[string]Reply{},
		cards: map[string]*Card{}, departments: map[string][]string{},
		resources: map[string]*resource{}, resourceGets: map[string]int{}, stored: map[string]*storedMessage{},
	}
	s.ws = newWSServer(s)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /open-apis/auth/v3/tenant_access_token/internal", s.handleToken)
	mux.HandleFunc("POST /open-apis/im/v1/messages/{id}/reply", s.authed(s.handleReply))
	mux.HandleFunc("POST /open-apis/im/v1/messages", s.authed(s.handleReply))
	mux.HandleFunc("POST /open-apis/im/v1/images", s.authed(s.handleImage))
	mux.HandleFunc("GET /open-apis/im/v1/messages/{id}", s.authed(s.handleGetMessage))
	mux.HandleFunc("PATCH /open-apis/im/v1/messages/{id}", s.authed(s.handlePatch))
	mux.HandleFunc("GET /open-apis/im/v1/messages/{id}/resources/{key}", s.authed(s.handleResource))
	mux.HandleFunc("POST /open-apis/cardkit/v1/cards", s.authed(s.handleCardCreate))
	mux.HandleFunc("PUT /open-apis/cardkit/v1/cards/{id}/elements/{element}/content", s.authed(s.handleCardContent))
	mux.HandleFunc("PATCH /open-apis/cardkit/v1/cards/{id}/settings", s.authed(s.handleCardSettings))
	mux.HandleFunc("GET /open-apis/bot/v3/info", s.authed(s.handleBotInfo))
	mux.HandleFunc("GET /open-apis/contact/v3/users/{id}", s.authed(s.handleUser))
	mux.HandleFunc("POST /callback/ws/endpoint", s.ws.handleEndpoint)
	mux.HandleFunc("GET /ws", s.ws.handleSocket)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() { s.ws.closeAll(); s.srv.Close() })
	return s
}

// URL is the base URL to configure as the app's domain.
func (s *Server) URL() string { return s.srv.URL }

// SetClock replaces the clock of the uuid window (default time.Now).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// InvalidateTokens makes every token issued so far invalid, as Feishu may
// do before it expires: the next call with one answers 99991663.
func (s *Server) InvalidateTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]bool{}
}

// TokenRequests counts tenant_access_token calls.
func (s *Server) TokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenRequests
}

// FailCards makes card creation answer 99991672 (no cardkit scope).
func (s *Server) FailCards(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCards = fail
}

// FailMessages makes new messages (im/v1/messages, not replies) answer
// code, as for a user outside the app's range (230013) or a missing scope
// (99991672); 0 ends it.
func (s *Server) FailMessages(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failMessages = code
}

// SetDepartments sets the department ids user/get answers for user.
func (s *Server) SetDepartments(user string, depts ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.departments[user] = depts
}

// DenyContact makes user/get answer 99991672 (no contact scope).
func (s *Server) DenyContact(deny bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.contactDenied = deny
}

// UserGets counts user/get calls.
func (s *Server) UserGets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userGets
}

// Replies returns every reply, duplicates included, in order.
func (s *Server) Replies() []Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Reply(nil), s.replies...)
}

// Delivered returns the replies shown to users (duplicates left out).
func (s *Server) Delivered() []Reply {
	var out []Reply
	for _, r := range s.Replies() {
		if !r.Duplicate {
			out = append(out, r)
		}
	}
	return out
}

// Cards returns copies of the cards in creation order.
func (s *Server) Cards() []Card {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Card
	for _, id := range s.cardOrder {
		c := *s.cards[id]
		c.Ops = append([]CardOp(nil), c.Ops...)
		out = append(out, c)
	}
	return out
}

// Calls returns "METHOD path" of every authorised call, in order.
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// WaitFor waits until cond holds (checked after every change) or ctx ends.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	if err := s.changes.Wait(ctx, cond); err != nil {
		return fmt.Errorf("feishutest: condition not met: %w", err)
	}
	return nil
}

// notify wakes WaitFor; call with s.mu held.
func (s *Server) notify() { s.changes.Broadcast() }

func answer(w http.ResponseWriter, status, code int, msg string, extra map[string]any) {
	body := map[string]any{"code": code, "msg": msg}
	for k, v := range extra {
		body[k] = v
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	if err := decode(r, &in); err != nil {
		answer(w, 400, 10003, "invalid param", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenRequests++
	if in.AppID != s.appID || in.AppSecret != s.appSecret {
		answer(w, 400, CodeBadSecret, "app secret invalid", nil)
		return
	}
	s.nextToken++
	tok := fmt.Sprintf("t-%s-%d", s.appID, s.nextToken)
	s.tokens[tok] = true
	answer(w, 200, 0, "ok", map[string]any{"tenant_access_token": tok, "expire": tokenExpire})
}

// authed checks the bearer token as Feishu does before the handler runs.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		valid := ok && s.tokens[tok]
		if valid {
			s.calls = append(s.calls, r.Method+" "+r.URL.Path)
		}
		s.mu.Unlock()
		if !valid {
			answer(w, 400, CodeTokenInvalid, "Invalid access token for authorization. Please make a request with token attached.", nil)
			return
		}
		h(w, r)
	}
}

func (s *Server) handleReply(w http.ResponseWriter, r *http.Request) {
	var in struct {
		MsgType   string `json:"msg_type"`
		Content   string `json:"content"`
		UUID      string `json:"uuid"`
		ReceiveID string `json:"receive_id"`
	}
	if err := decode(r, &in); err != nil || in.MsgType == "" || !json.Valid([]byte(in.Content)) {
		answer(w, 400, 230001, "invalid message content", nil)
		return
	}
	idType := r.URL.Query().Get("receive_id_type")
	if r.PathValue("id") == "" && (in.ReceiveID == "" || !slices.Contains([]string{"chat_id", "open_id", "user_id", "union_id", "email"}, idType)) {
		answer(w, 400, 230001, "invalid receive_id or receive_id_type", nil)
		return
	}
	if len(in.UUID) > 50 {
		answer(w, 400, 230001, "uuid longer than 50", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.PathValue("id") == "" && s.failMessages != 0 {
		answer(w, 400, s.failMessages, "injected failure", nil)
		return
	}
	if in.MsgType == "interactive" && s.failInteractive != 0 {
		answer(w, 400, s.failInteractive, "injected card failure", nil)
		return
	}
	if in.MsgType == "image" && !s.knownImage(in.Content) {
		answer(w, 400, 230001, "invalid image_key", nil)
		return
	}
	now := s.now()
	rep := Reply{To: r.PathValue("id"), MsgType: in.MsgType, Content: in.Content, UUID: in.UUID, At: now}
	if rep.To == "" {
		rep.ReceiveIDType, rep.ReceiveID = idType, in.ReceiveID
	}
	if prev, ok := s.uuids[in.UUID]; ok && in.UUID != "" && now.Sub(prev.At) < time.Hour {
		rep.MessageID, rep.Duplicate = prev.MessageID, true
	} else {
		rep.MessageID = fmt.Sprintf("om_reply_%d", len(s.replies)+1)
		if in.UUID != "" {
			s.uuids[in.UUID] = rep
		}
	}
	s.replies = append(s.replies, rep)
	s.notify()
	answer(w, 200, 0, "success", map[string]any{"data": map[string]any{"message_id": rep.MessageID, "msg_type": in.MsgType}})
}

func (s *Server) handleCardCreate(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	if err := decode(r, &in); err != nil || in.Type != "card_json" || !json.Valid([]byte(in.Data)) {
		answer(w, 400, 300301, "invalid card", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failCards {
		answer(w, 400, CodeNoScope, "Access denied. One of the following scopes is required: [cardkit:card:write]", nil)
		return
	}
	id := fmt.Sprintf("card_%d", len(s.cards)+1)
	s.cards[id] = &Card{ID: id, Data: in.Data}
	s.cardOrder = append(s.cardOrder, id)
	s.notify()
	answer(w, 200, 0, "success", map[string]any{"data": map[string]any{"card_id": id}})
}

func (s *Server) cardOp(w http.ResponseWriter, r *http.Request, kind string) {
	var in struct {
		Content  string `json:"content"`
		Settings string `json:"settings"`
		Sequence int    `json:"sequence"`
	}
	if err := decode(r, &in); err != nil {
		answer(w, 400, 300301, "invalid body", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cards[r.PathValue("id")]
	if !ok {
		answer(w, 400, 300302, "card not found", nil)
		return
	}
	if n := len(c.Ops); in.Sequence <= 0 || (n > 0 && in.Sequence <= c.Ops[n-1].Sequence) {
		answer(w, 400, CodeBadSequence, "sequence number compare failed", nil)
		return
	}
	content := in.Content
	if kind == "settings" {
		content = in.Settings
	}
	c.Ops = append(c.Ops, CardOp{Kind: kind, Sequence: in.Sequence, Content: content, At: time.Now()})
	s.notify()
	answer(w, 200, 0, "success", map[string]any{"data": map[string]any{}})
}

func (s *Server) handleCardContent(w http.ResponseWriter, r *http.Request) {
	s.cardOp(w, r, "content")
}

func (s *Server) handleCardSettings(w http.ResponseWriter, r *http.Request) {
	s.cardOp(w, r, "settings")
}

func (s *Server) handleBotInfo(w http.ResponseWriter, _ *http.Request) {
	answer(w, 200, 0, "ok", map[string]any{"bot": map[string]any{
		"activate_status": 2, "app_name": "Hermes", "open_id": s.BotOpenID, "ip_white_list": []string{},
	}})
}

func (s *Server) handleUser(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userGets++
	if s.contactDenied {
		answer(w, 400, CodeNoScope, "Access denied. One of the following scopes is required: [contact:contact.base:readonly]", nil)
		return
	}
	id := r.PathValue("id")
	depts, ok := s.departments[id]
	if !ok {
		answer(w, 400, 41050, "no user authority", nil)
		return
	}
	answer(w, 200, 0, "success", map[string]any{"data": map[string]any{"user": map[string]any{
		"user_id": id, "department_ids": depts,
	}}})
}
