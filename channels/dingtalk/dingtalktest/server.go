package dingtalktest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
)

// tokenExpiresIn is accessToken's expireIn, seconds.
const tokenExpiresIn = 7200

// webhookPath is where the fake's session webhooks live.
const webhookPath = "/robot/sendBySession"

// Sent is one robot message the fake accepted.
type Sent struct {
	Via          string   // "webhook" or "openapi"
	Users        []string // batchSend userIds
	Conversation string   // groupMessages/send openConversationId, or the webhook's session
	MsgKey       string   // "sampleMarkdown", "sampleImageMsg" (OpenAPI) or the webhook msgtype
	Title, Text  string
	PhotoURL     string   // sampleImageMsg: an Upload's media_id
	AtUserIDs    []string // the webhook's at.atUserIds
}

// CardCall is one card API call.
type CardCall struct {
	Op          string // "create" (createAndDeliver), "stream" (card/streaming) or "update" (PUT card/instances)
	OutTrackID  string
	OpenSpaceID string
	Content     string // the streamed text, or the created card's content param
	Finalize    bool
	// Template, CallbackType and AtUsers are a created card's; Params are
	// the cardParamMap of a create or an update.
	Template, CallbackType string
	AtUsers                map[string]string
	Params                 map[string]string
	At                     time.Time // when the fake took the call
}

// failure is an answer the fake gives instead of serving a path.
type failure struct {
	status int
	code   string
	left   int
}

// Server is a fake DingTalk for one app (AppKey and AppSecret).
type Server struct {
	srv               *httptest.Server
	appKey, appSecret string
	stream            *streamGateway

	mu            sync.Mutex
	tokens        map[string]bool // token → live
	tokenRequests int
	nextToken     int
	sent          []Sent
	cards         []CardCall
	fail          map[string]*failure
	departments   map[string][]int64
	noMemberPerm  bool
	userGets      int
	uploads       []Upload         // media/upload, in order (media.go)
	changes       chantest.Changes // wakes Wait on every recorded call
	frozen        map[string]bool  // client address → server writes dropped
	lose          map[string]int   // msgKey → recorded sends left to answer 500 (faults.go)

	files     map[string]*robotFile // downloadCode → attachment (files.go)
	fileStats FileStats
}

// NewServer starts a fake DingTalk for appKey/appSecret until t ends.
func NewServer(t testing.TB, appKey, appSecret string) *Server {
	s := &Server{
		appKey: appKey, appSecret: appSecret, tokens: map[string]bool{},
		fail: map[string]*failure{}, frozen: map[string]bool{}, departments: map[string][]int64{},
	}
	s.stream = newStreamGateway(s)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1.0/oauth2/accessToken", s.accessToken)
	mux.HandleFunc("POST /v1.0/robot/oToMessages/batchSend", s.withToken(s.robotSend))
	mux.HandleFunc("POST /v1.0/robot/groupMessages/send", s.withToken(s.robotSend))
	mux.HandleFunc("POST /v1.0/card/instances/createAndDeliver", s.withToken(s.cardCreate))
	mux.HandleFunc("PUT /v1.0/card/streaming", s.withToken(s.cardStream))
	mux.HandleFunc("PUT /v1.0/card/instances", s.withToken(s.cardUpdate))
	mux.HandleFunc("POST /topapi/v2/user/get", s.userGet)
	mux.HandleFunc("POST /media/upload", s.mediaUpload)
	mux.HandleFunc("POST /v1.0/robot/messageFiles/download", s.withToken(s.messageFiles))
	mux.HandleFunc("GET "+filesPath, s.serveFile)
	mux.HandleFunc("POST "+webhookPath, s.webhook)
	mux.HandleFunc("POST /v1.0/gateway/connections/open", s.stream.open)
	mux.HandleFunc("GET /connect", s.stream.connect)
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Listener = &freezeListener{Listener: s.srv.Listener, s: s}
	s.srv.Start()
	t.Cleanup(func() { s.stream.closeAll(); s.srv.Close() })
	return s
}

// URL is the base of both APIs (api_base_url and oapi_base_url).
func (s *Server) URL() string { return s.srv.URL }

// SessionWebhook is the session webhook URL of session.
func (s *Server) SessionWebhook(session string) string {
	return s.srv.URL + webhookPath + "?session=" + session
}

// Fail makes the next n calls of path (e.g. "/v1.0/robot/groupMessages/send")
// answer status with code instead.
func (s *Server) Fail(path string, n, status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[path] = &failure{status: status, code: code, left: n}
}

// ExpireTokens makes every token handed out so far invalid, as DingTalk
// may revoke one before its expireIn.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.tokens {
		s.tokens[k] = false
	}
}

// TokenRequests counts accessToken calls that got a token.
func (s *Server) TokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenRequests
}

// SetDepartments sets user's departments for user/get.
func (s *Server) SetDepartments(user string, depts ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.departments[user] = depts
}

// DenyMemberPermission makes user/get answer as for an app without the
// address-book permission.
func (s *Server) DenyMemberPermission() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noMemberPerm = true
}

// UserGets counts user/get calls.
func (s *Server) UserGets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userGets
}

// Sent returns the messages accepted so far, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Cards returns the AI card calls so far, in order.
func (s *Server) Cards() []CardCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CardCall(nil), s.cards...)
}

// Wait waits until cond holds over the recorded calls, or ctx ends.
func (s *Server) Wait(ctx context.Context, cond func(sent []Sent, cards []CardCall) bool) error {
	err := s.changes.Wait(ctx, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return cond(append([]Sent(nil), s.sent...), append([]CardCall(nil), s.cards...))
	})
	if err != nil {
		return fmt.Errorf("dingtalktest: condition not met: %w", err)
	}
	return nil
}

// recordLocked notes a change for Wait; s.mu is held.
func (s *Server) recordLocked() { s.changes.Broadcast() }

func (s *Server) accessToken(w http.ResponseWriter, r *http.Request) {
	var req struct{ AppKey, AppSecret string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "bad JSON")
		return
	}
	if req.AppKey != s.appKey || req.AppSecret != s.appSecret {
		writeError(w, http.StatusBadRequest, "invalidClientIdOrSecret", "无效的clientId或者clientSecret")
		return
	}
	s.mu.Lock()
	s.nextToken++
	s.tokenRequests++
	tok := fmt.Sprintf("token-%d", s.nextToken)
	s.tokens[tok] = true
	s.mu.Unlock()
	writeJSON(w, map[string]any{"accessToken": tok, "expireIn": tokenExpiresIn})
}

// withToken checks the x-acs-dingtalk-access-token header and injected
// failures before h.
func (s *Server) withToken(h func(w http.ResponseWriter, body []byte, path string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.live(r.Header.Get("x-acs-dingtalk-access-token")) {
			writeError(w, http.StatusUnauthorized, "InvalidAuthentication", "不合法的access_token")
			return
		}
		if s.failing(w, r.URL.Path) {
			return
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		h(w, body, r.URL.Path)
	}
}

func (s *Server) live(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[tok]
}

// failing answers an injected failure of path, if one is left: as the
// OpenAPI does ({code, message} with the status), or for a session webhook
// as it does (errcode in a 200).
func (s *Server) failing(w http.ResponseWriter, path string) bool {
	s.mu.Lock()
	f := s.fail[path]
	if f == nil || f.left <= 0 {
		s.mu.Unlock()
		return false
	}
	f.left--
	s.mu.Unlock()
	if path == webhookPath {
		code, _ := strconv.Atoi(f.code)
		writeJSON(w, map[string]any{"errcode": code, "errmsg": "injected failure"})
		return true
	}
	writeError(w, f.status, f.code, "injected failure")
	return true
}

func (s *Server) robotSend(w http.ResponseWriter, body []byte, path string) {
	var req struct {
		RobotCode          string   `json:"robotCode"`
		UserIDs            []string `json:"userIds"`
		OpenConversationID string   `json:"openConversationId"`
		MsgKey             string   `json:"msgKey"`
		MsgParam           string   `json:"msgParam"` // must be a string
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "msgParam must be a JSON string: "+err.Error())
		return
	}
	var param struct{ Title, Text, Content, PhotoURL string }
	err := json.Unmarshal([]byte(req.MsgParam), &param)
	switch {
	case err == nil && req.MsgKey == "sampleMarkdown" && param.Text != "" && param.Title != "":
	case err == nil && req.MsgKey == "sampleText" && param.Content != "":
		param.Text = param.Content
	case err == nil && req.MsgKey == "sampleImageMsg" && s.knowsUpload(param.PhotoURL):
	default:
		writeError(w, http.StatusBadRequest, "InvalidParameter", "msgKey sampleMarkdown needs msgParam {title,text}, sampleText {content}, sampleImageMsg {photoURL} of an upload")
		return
	}
	group := strings.HasSuffix(path, "/groupMessages/send")
	if req.RobotCode != s.appKey || (group && req.OpenConversationID == "") || (!group && len(req.UserIDs) == 0) {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "robotCode or recipient missing")
		return
	}
	s.mu.Lock()
	s.sent = append(s.sent, Sent{Via: "openapi", Users: req.UserIDs, Conversation: req.OpenConversationID,
		MsgKey: req.MsgKey, Title: param.Title, Text: param.Text, PhotoURL: param.PhotoURL})
	s.recordLocked()
	s.mu.Unlock()
	if s.loseAnswer(w, req.MsgKey) {
		return
	}
	writeJSON(w, map[string]any{"processQueryKey": fmt.Sprintf("pqk-%d", len(s.Sent()))})
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	if s.failing(w, webhookPath) {
		return
	}
	var req struct {
		MsgType  string `json:"msgtype"`
		Markdown struct{ Title, Text string }
		At       struct {
			AtUserIDs []string `json:"atUserIds"`
		} `json:"at"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.MsgType != "markdown" || req.Markdown.Text == "" || req.Markdown.Title == "" {
		writeJSON(w, map[string]any{"errcode": 40035, "errmsg": "缺少参数 markdown"})
		return
	}
	s.mu.Lock()
	s.sent = append(s.sent, Sent{Via: "webhook", Conversation: r.URL.Query().Get("session"), MsgKey: req.MsgType,
		Title: req.Markdown.Title, Text: req.Markdown.Text, AtUserIDs: req.At.AtUserIDs})
	s.recordLocked()
	s.mu.Unlock()
	writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok"})
}

func (s *Server) cardCreate(w http.ResponseWriter, body []byte, _ string) {
	var req struct {
		CardTemplateID, OutTrackID, OpenSpaceID, CallbackType string
		CardData                                              struct{ CardParamMap map[string]string }
		ImGroupOpenDeliverModel                               struct {
			AtUserIDs map[string]string `json:"atUserIds"`
		}
	}
	if err := json.Unmarshal(body, &req); err != nil || req.CardTemplateID == "" || req.OutTrackID == "" ||
		!strings.HasPrefix(req.OpenSpaceID, "dtv1.card//") {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "cardTemplateId, outTrackId and openSpaceId are required; cardParamMap values must be strings")
		return
	}
	content := ""
	for _, v := range req.CardData.CardParamMap {
		content = v
	}
	s.mu.Lock()
	s.cards = append(s.cards, CardCall{Op: "create", OutTrackID: req.OutTrackID, OpenSpaceID: req.OpenSpaceID, Content: content,
		Template: req.CardTemplateID, CallbackType: req.CallbackType, AtUsers: req.ImGroupOpenDeliverModel.AtUserIDs,
		Params: req.CardData.CardParamMap, At: time.Now()})
	s.recordLocked()
	s.mu.Unlock()
	spaceID := req.OpenSpaceID[strings.LastIndex(req.OpenSpaceID, ".")+1:]
	writeJSON(w, map[string]any{"success": true, "result": map[string]any{"outTrackId": req.OutTrackID,
		"deliverResults": []map[string]any{{"spaceId": spaceID, "success": true, "carrierId": "carrier-" + req.OutTrackID}}}})
}

// cardUpdate is PUT /v1.0/card/instances: a created card's variables
// replaced (updateCardDataByKey: only the keys given).
func (s *Server) cardUpdate(w http.ResponseWriter, body []byte, _ string) {
	var req struct {
		OutTrackID string `json:"outTrackId"`
		CardData   struct {
			CardParamMap map[string]string `json:"cardParamMap"`
		} `json:"cardData"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.OutTrackID == "" {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "outTrackId is required; cardParamMap values must be strings")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.createdLocked(req.OutTrackID); !ok {
		writeError(w, http.StatusBadRequest, "param.cardNotExist", "card instance not found")
		return
	}
	s.cards = append(s.cards, CardCall{Op: "update", OutTrackID: req.OutTrackID, Params: req.CardData.CardParamMap, At: time.Now()})
	s.recordLocked()
	writeJSON(w, map[string]any{"success": true, "result": true})
}

// createdLocked is the create call of the card outTrackID; s.mu is held.
func (s *Server) createdLocked(outTrackID string) (CardCall, bool) {
	for _, c := range s.cards {
		if c.Op == "create" && c.OutTrackID == outTrackID {
			return c, true
		}
	}
	return CardCall{}, false
}

func (s *Server) cardStream(w http.ResponseWriter, body []byte, _ string) {
	var req struct {
		OutTrackID, GUID, Key, Content string
		IsFull, IsFinalize             bool
	}
	if err := json.Unmarshal(body, &req); err != nil || req.OutTrackID == "" || req.GUID == "" || req.Key == "" {
		writeError(w, http.StatusBadRequest, "InvalidParameter", "outTrackId, guid and key are required")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	created := false
	for _, c := range s.cards {
		created = created || (c.Op == "create" && c.OutTrackID == req.OutTrackID)
	}
	if !created {
		writeError(w, http.StatusNotFound, "card.notExist", "card instance not found")
		return
	}
	s.cards = append(s.cards, CardCall{Op: "stream", OutTrackID: req.OutTrackID, Content: req.Content, Finalize: req.IsFinalize})
	s.recordLocked()
	writeJSON(w, map[string]any{})
}

func (s *Server) userGet(w http.ResponseWriter, r *http.Request) {
	var req struct{ UserID string }
	_ = json.NewDecoder(r.Body).Decode(&req)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userGets++
	switch depts, ok := s.departments[req.UserID]; {
	case !s.tokens[r.URL.Query().Get("access_token")]:
		writeJSON(w, map[string]any{"errcode": 40014, "errmsg": "不合法的access_token"})
	case s.noMemberPerm:
		writeJSON(w, map[string]any{"errcode": 60011, "errmsg": "应用尚未开通所需的权限：[qyapi_get_member]"})
	case !ok:
		writeJSON(w, map[string]any{"errcode": 60121, "errmsg": "找不到该用户"})
	default:
		writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok", "result": map[string]any{"userid": req.UserID, "dept_id_list": depts}})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers as the OpenAPI does: {code, message, requestid}.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg, "requestid": "fake-request"})
}

// freezeListener wraps the server's connections so that one can go silent.
type freezeListener struct {
	net.Listener
	s *Server
}

func (l *freezeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &freezeConn{Conn: c, s: l.s}, nil
}

type freezeConn struct {
	net.Conn
	s *Server
}

// Write drops what a frozen connection would send.
func (c *freezeConn) Write(p []byte) (int, error) {
	if c.s.isFrozen(c.RemoteAddr().String()) {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (s *Server) freeze(remote string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frozen[remote] = true
}

func (s *Server) isFrozen(remote string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frozen[remote]
}
