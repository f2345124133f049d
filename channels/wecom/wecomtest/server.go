package wecomtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
)

// Limits the fake enforces as WeCom does.
const (
	maxTextBytes            = 2048     // longer text is cut by WeCom, not refused
	defaultDuplicateSeconds = 1800     // duplicate_check_interval default
	maxDuplicateSeconds     = 4 * 3600 // duplicate_check_interval maximum
	tokenExpiresIn          = 7200     // gettoken expires_in
	maxBodyBytes            = 1 << 20  // a sane cap for request bodies
)

// errmsgs are the errmsg texts WeCom answers with, for the codes the fake
// produces or is told to fail with.
var errmsgs = map[int]string{
	-1:    "system busy",
	40001: "invalid credential, hint: [fake]",
	40008: "invalid message type",
	40013: "invalid corpid",
	40014: "invalid access_token",
	40056: "invalid agentid",
	41001: "access_token missing",
	41002: "corpid missing",
	41004: "corpsecret missing",
	42001: "access_token expired",
	44004: "empty content",
	45009: "api freq out of limit",
	60020: "not allow to access from your ip, hint: [fake], from ip: 192.0.2.1, more info at https://open.work.weixin.qq.com/devtool/query?e=60020",
	81013: "user & party & tag all invalid",
}

// SentMessage is one message/send request the fake accepted.
type SentMessage struct {
	ToUser, ToParty, ToTag string
	MsgType                string
	AgentID                string // as sent, JSON number or string
	Content                string // as delivered: text cut at 2048 bytes like WeCom; a template card's body, else its title (the card: Cards)
	MediaID                string // an image message's media_id (an Upload's)
	Truncated              bool   // Content was longer than WeCom allows
	Safe                   int
	EnableDuplicateCheck   int
	DuplicateCheckInterval int
	MsgID                  string // the msgid answered
	Duplicate              bool   // suppressed by the duplicate check, not delivered
	At                     time.Time
}

// Server is a fake WeCom API for one corp and one app secret.
type Server struct {
	srv    *httptest.Server
	corpID string
	secret string

	mu            sync.Mutex
	now           func() time.Time
	tokens        map[string]bool
	tokenRequests int
	failCode      int
	failLeft      int
	requests      []SentMessage // accepted send requests, delivered or not
	delivered     []SentMessage
	changed       chantest.Changes // notified on every delivery
	nextMsgID     int
	departments   map[string][]int // user → department ids, for user/get
	userGets      int
	uploads       []Upload             // media/upload, in order (media.go)
	loseAnswers   map[string]int       // msgtype → accepted sends left to go unanswered (faults.go)
	media         map[string]heldMedia // media/get (media_get.go)
	mediaGets     int
	card          cardState // template cards sent, their codes and updates (cards.go)
}

// NewServer starts a fake WeCom API that issues tokens for corpID + secret.
// t.Cleanup closes it.
func NewServer(t testing.TB, corpID, secret string) *Server {
	s := &Server{
		corpID: corpID,
		secret: secret,
		now:    time.Now,
		tokens: map[string]bool{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /cgi-bin/gettoken", s.handleGetToken)
	mux.HandleFunc("POST /cgi-bin/message/send", s.handleSend)
	mux.HandleFunc("POST /cgi-bin/media/upload", s.handleUpload)
	mux.HandleFunc("GET /cgi-bin/user/get", s.handleUserGet)
	mux.HandleFunc("GET /cgi-bin/media/get", s.handleMediaGet)
	mux.HandleFunc("POST /cgi-bin/message/update_template_card", s.handleUpdateCard)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// URL returns the base URL to use as the app's APIBaseURL.
func (s *Server) URL() string { return s.srv.URL }

// SetClock replaces the clock the duplicate check uses (default time.Now).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// InvalidateTokens makes every token issued so far invalid, as WeCom may do
// before expires_in: the next send with one answers errcode 40014.
func (s *Server) InvalidateTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = map[string]bool{}
}

// FailNextSends makes the next n message/send calls that pass the token
// check answer errcode (e.g. 60020, 45009, 40014).
func (s *Server) FailNextSends(errcode int, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failCode, s.failLeft = errcode, n
}

// Messages returns the delivered messages in order.
func (s *Server) Messages() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.delivered...)
}

// Requests returns every accepted send request, including those the
// duplicate check suppressed (Duplicate set).
func (s *Server) Requests() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.requests...)
}

// WaitMessages blocks until at least n messages are delivered or ctx ends,
// and returns the delivered messages.
func (s *Server) WaitMessages(ctx context.Context, n int) ([]SentMessage, error) {
	var msgs []SentMessage
	err := waitUntil(ctx, &s.mu, &s.changed, func() bool {
		msgs = append(msgs[:0], s.delivered...)
		return len(msgs) >= n
	})
	if err != nil {
		return msgs, fmt.Errorf("wecomtest: %d of %d messages delivered: %w", len(msgs), n, err)
	}
	return msgs, nil
}

// SetDepartments makes user/get answer these department ids for user;
// unknown users get errcode 60111 (userid not found).
func (s *Server) SetDepartments(user string, depts ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.departments == nil {
		s.departments = map[string][]int{}
	}
	s.departments[user] = depts
}

// UserGets returns how many user/get calls arrived.
func (s *Server) UserGets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userGets
}

// handleUserGet is GET /cgi-bin/user/get?access_token&userid.
func (s *Server) handleUserGet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userGets++
	if !s.tokens[q.Get("access_token")] {
		writeErr(w, 40014)
		return
	}
	depts, ok := s.departments[q.Get("userid")]
	if !ok {
		writeJSON(w, map[string]any{"errcode": 60111, "errmsg": "userid not found"})
		return
	}
	writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok", "userid": q.Get("userid"), "department": depts})
}

// TokenRequests returns how many gettoken calls arrived, failed ones included.
func (s *Server) TokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenRequests
}

func (s *Server) handleGetToken(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenRequests++
	switch {
	case q.Get("corpid") == "":
		writeErr(w, 41002)
	case q.Get("corpsecret") == "":
		writeErr(w, 41004)
	case q.Get("corpid") != s.corpID:
		writeErr(w, 40013)
	case q.Get("corpsecret") != s.secret:
		writeErr(w, 40001)
	default:
		// Random tokens: several fakes may run in one process, and the client
		// routes by token.
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		token := "fake-" + hex.EncodeToString(b)
		s.tokens[token] = true
		writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok", "access_token": token, "expires_in": tokenExpiresIn})
	}
}

// sendBody is the message/send JSON as WeCom documents it.
type sendBody struct {
	ToUser                 string          `json:"touser"`
	ToParty                string          `json:"toparty"`
	ToTag                  string          `json:"totag"`
	MsgType                string          `json:"msgtype"`
	AgentID                json.RawMessage `json:"agentid"`
	Safe                   int             `json:"safe"`
	EnableDuplicateCheck   int             `json:"enable_duplicate_check"`
	DuplicateCheckInterval int             `json:"duplicate_check_interval"`
	Text                   *struct {
		Content string `json:"content"`
	} `json:"text"`
	Image *struct {
		MediaID string `json:"media_id"`
	} `json:"image"`
	TemplateCard json.RawMessage `json:"template_card"`
}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	var body sendBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := dec.Decode(&body); err != nil {
		writeJSON(w, map[string]any{"errcode": 47001, "errmsg": "data format error"})
		return
	}
	token := r.URL.Query().Get("access_token")

	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case token == "":
		writeErr(w, 41001)
		return
	case !s.tokens[token]:
		writeErr(w, 40014)
		return
	case s.failLeft > 0:
		s.failLeft--
		writeErr(w, s.failCode)
		return
	}
	if body.MsgType == "template_card" && s.card.refuse != 0 {
		writeErr(w, s.card.refuse)
		return
	}
	agentID, ok := parseAgentID(body.AgentID)
	content, mediaID, code := s.messageContent(body)
	switch {
	case !ok:
		writeErr(w, 40056)
		return
	case code != 0:
		writeErr(w, code)
		return
	case body.ToUser == "" && body.ToParty == "" && body.ToTag == "":
		writeErr(w, 81013)
		return
	}

	m := SentMessage{
		ToUser: body.ToUser, ToParty: body.ToParty, ToTag: body.ToTag,
		MsgType: body.MsgType, AgentID: agentID, Content: content, MediaID: mediaID,
		Safe: body.Safe, EnableDuplicateCheck: body.EnableDuplicateCheck,
		DuplicateCheckInterval: body.DuplicateCheckInterval, At: s.now(),
	}
	if m.MsgType == "text" && len(m.Content) > maxTextBytes {
		m.Content, m.Truncated = m.Content[:maxTextBytes], true
	}
	if orig, dup := s.duplicateOf(m); dup {
		// WeCom answers success and the id of the message already delivered.
		m.Duplicate, m.MsgID = true, orig.MsgID
		s.requests = append(s.requests, m)
		if s.loseAnswer(m.MsgType) {
			dropConnection(w)
			return
		}
		writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok", "msgid": m.MsgID})
		return
	}
	s.nextMsgID++
	m.MsgID = "fake-msg-" + strconv.Itoa(s.nextMsgID)
	s.requests = append(s.requests, m)
	s.delivered = append(s.delivered, m)
	var responseCode string
	if m.MsgType == "template_card" {
		responseCode = s.cardSent(m, body.TemplateCard)
	}
	s.changed.Broadcast()
	if s.loseAnswer(m.MsgType) {
		dropConnection(w)
		return
	}
	answer := map[string]any{"errcode": 0, "errmsg": "ok", "invaliduser": "", "msgid": m.MsgID}
	if responseCode != "" {
		answer["response_code"] = responseCode
	}
	writeJSON(w, answer)
}

// duplicateOf finds, when m asks for the duplicate check, a delivered
// message of the same app, recipients and content within the interval. Any
// earlier delivery counts, flagged or not: that is what lets a retry
// suppress the copy its interrupted first attempt delivered.
func (s *Server) duplicateOf(m SentMessage) (SentMessage, bool) {
	if m.EnableDuplicateCheck != 1 {
		return SentMessage{}, false
	}
	interval := m.DuplicateCheckInterval
	if interval <= 0 {
		interval = defaultDuplicateSeconds
	}
	interval = min(interval, maxDuplicateSeconds)
	since := m.At.Add(-time.Duration(interval) * time.Second)
	for i := len(s.delivered) - 1; i >= 0; i-- {
		d := s.delivered[i]
		if d.At.Before(since) {
			continue
		}
		if d.AgentID == m.AgentID && d.ToUser == m.ToUser && d.ToParty == m.ToParty &&
			d.ToTag == m.ToTag && d.MsgType == m.MsgType && d.Content == m.Content && d.MediaID == m.MediaID {
			return d, true
		}
	}
	return SentMessage{}, false
}

// parseAgentID accepts agentid as a JSON integer or a string of digits
// (silenceper sends a string; WeCom accepts both).
func parseAgentID(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	var s string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false
		}
	} else {
		s = string(raw)
	}
	if _, err := strconv.ParseInt(s, 10, 64); err != nil {
		return "", false
	}
	return s, true
}

func writeErr(w http.ResponseWriter, code int) {
	msg, ok := errmsgs[code]
	if !ok {
		msg = "fake error"
	}
	writeJSON(w, map[string]any{"errcode": code, "errmsg": msg})
}

// writeJSON answers HTTP 200 whatever the errcode, as WeCom does.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(v)
}
