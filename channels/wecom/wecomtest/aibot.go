package wecomtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// BotMessage is who wrote to an AI bot, and where: the head every AI bot
// callback (and long-connection callback body) carries. ChatType is
// "single" or "group"; ChatID is set in groups only, as WeCom does.
type BotMessage struct {
	MsgID       string
	AIBotID     string
	ChatID      string
	ChatType    string
	UserID      string
	ResponseURL string // callback mode only
	CreateTime  int64  // events only
}

func (m BotMessage) json(msgType string, fields map[string]any) []byte {
	v := map[string]any{
		"msgid":    m.MsgID,
		"aibotid":  m.AIBotID,
		"chattype": m.ChatType,
		"from":     map[string]any{"userid": m.UserID},
		"msgtype":  msgType,
	}
	if m.ChatID != "" {
		v["chatid"] = m.ChatID
	}
	if m.ResponseURL != "" {
		v["response_url"] = m.ResponseURL
	}
	if m.CreateTime != 0 {
		v["create_time"] = m.CreateTime
	}
	for k, f := range fields {
		v[k] = f
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// Text is a text message; in groups WeCom starts content with the bot's
// mention, e.g. "@HR助手 请假怎么申请".
func (m BotMessage) Text(content string) []byte {
	return m.json("text", map[string]any{"text": map[string]any{"content": content}})
}

// Voice is a voice message, as WeCom gives it: its transcript.
func (m BotMessage) Voice(transcript string) []byte {
	return m.json("voice", map[string]any{"voice": map[string]any{"content": transcript}})
}

// Image is an image message (the URL lives 5 minutes; the file is
// encrypted).
func (m BotMessage) Image(u string) []byte {
	return m.json("image", map[string]any{"image": map[string]any{"url": u}})
}

// ImageWithKey is an image message of the long connection: its URL comes
// with the file's own aeskey.
func (m BotMessage) ImageWithKey(u, aesKey string) []byte {
	return m.json("image", map[string]any{"image": map[string]any{"url": u, "aeskey": aesKey}})
}

// FileWithKey is a file message of the long connection.
func (m BotMessage) FileWithKey(u, aesKey string) []byte {
	return m.json("file", map[string]any{"file": map[string]any{"url": u, "aeskey": aesKey}})
}

// MixedImageWithKey is an image item of a long connection's Mixed message.
func MixedImageWithKey(u, aesKey string) any {
	return map[string]any{"msgtype": "image", "image": map[string]any{"url": u, "aeskey": aesKey}}
}

// File is a file message.
func (m BotMessage) File(u string) []byte {
	return m.json("file", map[string]any{"file": map[string]any{"url": u}})
}

// MixedText and MixedImage are items of a Mixed message.
func MixedText(content string) any {
	return map[string]any{"msgtype": "text", "text": map[string]any{"content": content}}
}

// MixedImage is an image item of a Mixed message.
func MixedImage(u string) any {
	return map[string]any{"msgtype": "image", "image": map[string]any{"url": u}}
}

// Mixed is a message of text and images (MixedText, MixedImage items).
func (m BotMessage) Mixed(items ...any) []byte {
	return m.json("mixed", map[string]any{"mixed": map[string]any{"msg_item": items}})
}

// StreamRefresh is WeCom asking for more of stream streamID (callback
// mode); MsgID is the refresh's own id.
func (m BotMessage) StreamRefresh(streamID string) []byte {
	return m.json("stream", map[string]any{"stream": map[string]any{"id": streamID}})
}

// Event is an event callback (enter_chat, feedback_event, ...).
func (m BotMessage) Event(eventType string) []byte {
	return m.json("event", map[string]any{"event": map[string]any{"eventtype": eventType}})
}

// EnterChat is the event of a user opening the chat with the bot.
func (m BotMessage) EnterChat() []byte { return m.Event("enter_chat") }

// TemplateCardEvent is the event of a tap on a template card's button
// (接收事件, doc 101027): UserID tapped the button whose key is eventKey on
// the card taskID. In callback mode it carries a response_url of its own.
func (m BotMessage) TemplateCardEvent(eventKey, taskID string) []byte {
	return m.json("event", map[string]any{"event": map[string]any{
		"eventtype": "template_card_event",
		"template_card_event": map[string]any{
			"card_type": "button_interaction", "event_key": eventKey, "task_id": taskID,
		},
	}})
}

// DisconnectedEvent is the body WeCom pushes (aibot_event_callback) on a
// long connection that a newer one for the same bot replaced, before it
// closes it. No user caused it, so it has no from and no chattype: the
// official SDK recognises it by event.eventtype alone.
func DisconnectedEvent(msgID, aibotID string, createTime int64) []byte {
	b, err := json.Marshal(map[string]any{
		"msgid":       msgID,
		"aibotid":     aibotID,
		"create_time": createTime,
		"msgtype":     "event",
		"event":       map[string]any{"eventtype": "disconnected_event"},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// BotCallback builds an AI bot callback POST as WeCom sends it: the query
// (msg_signature, timestamp, nonce) and the body {"encrypt": ...}. c is the
// bot's crypto, receiveid "".
func BotCallback(c *wxbiz.Crypto, plainJSON []byte, timestamp, nonce string) (url.Values, []byte) {
	q, enc := sealed(c, plainJSON, timestamp, nonce)
	body, _ := json.Marshal(map[string]string{"encrypt": enc})
	return q, body
}

// BotCallbackRequest is BotCallback as an *http.Request to path (e.g.
// "/wecom/bot/hr-bot/callback"), timestamped now, with nonce "nonce-<now>".
func BotCallbackRequest(c *wxbiz.Crypto, path string, plainJSON []byte, now time.Time) *http.Request {
	ts := strconv.FormatInt(now.Unix(), 10)
	q, body := BotCallback(c, plainJSON, ts, "nonce-"+ts)
	return httptest.NewRequest(http.MethodPost, path+"?"+q.Encode(), strings.NewReader(string(body)))
}

// BotReply is what a bot said: a passive reply's decrypted content, or
// the body of a long-connection frame (aibot_respond_msg,
// aibot_respond_welcome_msg, aibot_send_msg), or a response_url POST.
type BotReply struct {
	ChatID  string `json:"chatid"`
	MsgType string `json:"msgtype"`
	Text    struct {
		Content string `json:"content"`
	} `json:"text"`
	Markdown struct {
		Content string `json:"content"`
	} `json:"markdown"`
	Stream struct {
		ID      string `json:"id"`
		Finish  bool   `json:"finish"`
		Content string `json:"content"`
	} `json:"stream"`
	Image struct {
		MediaID string `json:"media_id"`
	} `json:"image"`
	TemplateCard TemplateCard `json:"template_card"`
	// ResponseType is "update_template_card" in the answer to a tap.
	ResponseType string   `json:"response_type"`
	UserIDs      []string `json:"userids"`
}

// TemplateCard is a template card an app or a bot sent or redrew (模板卡片
// 类型: doc 90236 for apps' message/send and update_template_card, 101032
// for bots), the fields of a button_interaction card Hermes uses.
type TemplateCard struct {
	CardType  string `json:"card_type"`
	MainTitle struct {
		Title string `json:"title"`
		Desc  string `json:"desc"`
	} `json:"main_title"`
	SubTitleText string       `json:"sub_title_text"`
	TaskID       string       `json:"task_id"`
	Buttons      []CardButton `json:"button_list"`
	ReplaceText  string       `json:"replace_text"`
}

// CardButton is one button of a TemplateCard.
type CardButton struct {
	Type  int    `json:"type"`
	Text  string `json:"text"`
	Style int    `json:"style"`
	Key   string `json:"key"`
}

// cardProblem is what WeCom would refuse in a card sent or redrawn ("" for
// nothing): the limits of doc 101032.
func cardProblem(c TemplateCard) string {
	switch {
	case c.CardType != "button_interaction":
		return "card_type " + c.CardType
	case c.TaskID == "" || len(c.TaskID) > 128:
		return "task_id missing or over 128 bytes"
	case len(c.Buttons) == 0 || len(c.Buttons) > 6:
		return fmt.Sprintf("%d buttons", len(c.Buttons))
	}
	for _, b := range c.Buttons {
		if b.Text == "" || b.Key == "" || len(b.Key) > 1024 || b.Style < 1 || b.Style > 4 {
			return fmt.Sprintf("button %+v", b)
		}
	}
	return ""
}

// CodeBadCard is the errcode the fakes answer a card WeCom would refuse
// with (invalid template_card).
const CodeBadCard = 40058

// OpenBotReply checks and decrypts a passive reply as WeCom would: the
// JSON {"encrypt","msgsignature","timestamp","nonce"} with an integer
// timestamp, the callback's nonce, and a valid signature.
func OpenBotReply(c *wxbiz.Crypto, body []byte, nonce string) (BotReply, error) {
	var env struct {
		Encrypt      string          `json:"encrypt"`
		MsgSignature string          `json:"msgsignature"`
		Timestamp    json.RawMessage `json:"timestamp"`
		Nonce        string          `json:"nonce"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return BotReply{}, fmt.Errorf("passive reply is not JSON: %v: %q", err, body)
	}
	ts, err := strconv.ParseInt(string(env.Timestamp), 10, 64)
	if err != nil {
		return BotReply{}, fmt.Errorf("timestamp %s is not an integer", env.Timestamp)
	}
	if env.Nonce != nonce {
		return BotReply{}, fmt.Errorf("nonce %q, want the callback's %q", env.Nonce, nonce)
	}
	if !c.VerifySignature(env.MsgSignature, strconv.FormatInt(ts, 10), env.Nonce, env.Encrypt) {
		return BotReply{}, errors.New("msgsignature does not verify")
	}
	plain, err := c.Decrypt(env.Encrypt)
	if err != nil {
		return BotReply{}, err
	}
	var r BotReply
	if err := json.Unmarshal(plain, &r); err != nil {
		return BotReply{}, fmt.Errorf("decrypted reply is not JSON: %v: %q", err, plain)
	}
	return r, nil
}

// ResponseURLUsed is the errcode the fake answers a second POST to one
// response_url with (WeCom accepts one; its own code is not documented).
const ResponseURLUsed = 600039

// ResponsePost is one POST a ResponseURLServer accepted.
type ResponsePost struct {
	Code  string   // which response_url (its response_code)
	Reply BotReply // the body: msgtype markdown or template_card
	At    time.Time
}

// ResponseURLServer fakes the response_urls of AI bot callbacks: each URL
// accepts one POST (markdown, or a template card), as WeCom's do.
type ResponseURLServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	posts    []ResponsePost
	used     map[string]bool
	failNext int // errcode for the next POST, 0 for none
	changed  chantest.Changes
}

// NewResponseURLServer starts the fake; t.Cleanup closes it.
func NewResponseURLServer(t testing.TB) *ResponseURLServer {
	s := &ResponseURLServer{used: map[string]bool{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the response_url of message msgID.
func (s *ResponseURLServer) URL(msgID string) string {
	return s.srv.URL + "/cgi-bin/aibot/response?response_code=" + url.QueryEscape(msgID)
}

// FailNext makes the next POST answer errcode (e.g. -1, system busy).
func (s *ResponseURLServer) FailNext(errcode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = errcode
}

// Posts returns the POSTs accepted so far.
func (s *ResponseURLServer) Posts() []ResponsePost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ResponsePost(nil), s.posts...)
}

// WaitPosts blocks until at least n POSTs were accepted or ctx ends.
func (s *ResponseURLServer) WaitPosts(ctx context.Context, n int) ([]ResponsePost, error) {
	var posts []ResponsePost
	err := waitUntil(ctx, &s.mu, &s.changed, func() bool {
		posts = append(posts[:0], s.posts...)
		return len(posts) >= n
	})
	if err != nil {
		return posts, fmt.Errorf("wecomtest: %d response_url POSTs, want %d: %w", len(posts), n, err)
	}
	return posts, nil
}

func (s *ResponseURLServer) handle(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("response_code")
	var reply BotReply
	if r.Method != http.MethodPost || code == "" || json.NewDecoder(r.Body).Decode(&reply) != nil {
		writeJSON(w, map[string]any{"errcode": 40035, "errmsg": "invalid args"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.failNext != 0:
		writeJSON(w, map[string]any{"errcode": s.failNext, "errmsg": "fake failure"})
		s.failNext = 0
		return
	case s.used[code]:
		writeJSON(w, map[string]any{"errcode": ResponseURLUsed, "errmsg": "response_url already used"})
		return
	case reply.MsgType == "template_card":
		if p := cardProblem(reply.TemplateCard); p != "" {
			writeJSON(w, map[string]any{"errcode": CodeBadCard, "errmsg": "invalid template_card: " + p})
			return
		}
	case reply.MsgType != "markdown" || reply.Markdown.Content == "":
		writeJSON(w, map[string]any{"errcode": 40008, "errmsg": "invalid message type"})
		return
	}
	s.used[code] = true
	s.posts = append(s.posts, ResponsePost{Code: code, Reply: reply, At: time.Now()})
	s.changed.Broadcast()
	writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok"})
}
