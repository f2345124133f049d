package wecomtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// WeCom's rules for template cards, as the fake enforces them
// (发送应用消息 document/path/90236, 更新模版卡片消息 94888).
const (
	maxCardButtons    = 6    // button_list "列表长度不超过6"
	maxTaskIDBytes    = 128  // task_id, of [0-9A-Za-z_\-@], unique per app
	maxButtonKeyBytes = 1024 // button key, back as EventKey
	codeTaskID        = 42014
	// CodeResponseCodeUsed is the fake's errcode for an update whose
	// response_code is unknown or was used before (WeCom's own code for it
	// is not documented; each code works once).
	CodeResponseCodeUsed = 40058
)

// SentCard is a template card the fake delivered.
type SentCard struct {
	ToUser       string
	MsgID        string
	ResponseCode string // the send's code: one update of the card
	Card         TemplateCard
	At           time.Time
}

// CardUpdate is one update_template_card call the fake took.
type CardUpdate struct {
	TaskID       string // the card the response_code belongs to
	ResponseCode string
	AtAll        int
	UserIDs      []string
	Card         *TemplateCard // the card redrawn; nil for a button update
	ReplaceName  string        // button.replace_name of a button update
	At           time.Time
}

// cardState is what the fake knows of template cards.
type cardState struct {
	cards   []SentCard
	updates []CardUpdate
	codes   map[string]string // unused response_code → task_id
	tasks   map[string]bool   // task_ids used by this app
	refuse  int               // errcode every template_card send answers (RefuseCards)
}

// RefuseCards makes every template_card send answer errcode (0: take
// them again), as WeCom refuses a card it will not show.
func (s *Server) RefuseCards(errcode int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.card.refuse = errcode
}

// Cards returns the template cards delivered, in order.
func (s *Server) Cards() []SentCard {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentCard(nil), s.card.cards...)
}

// CardUpdates returns the update_template_card calls taken, in order.
func (s *Server) CardUpdates() []CardUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CardUpdate(nil), s.card.updates...)
}

// ClickCode is a fresh response_code for a click on the card taskID, as
// WeCom puts one in each template_card_event.
func (s *Server) ClickCode(taskID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newCode(taskID)
}

// newCode registers a response_code for taskID; s.mu is held.
func (s *Server) newCode(taskID string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	code := "rc-" + hex.EncodeToString(b)
	if s.card.codes == nil {
		s.card.codes = map[string]string{}
	}
	s.card.codes[code] = taskID
	return code
}

// cardContent checks a template_card send as WeCom does and returns the
// message's content, what the user reads first on the card (its body,
// else its title; the card itself is in Cards), or an errcode; s.mu is
// held.
func (s *Server) cardContent(raw json.RawMessage) (string, int) {
	var c TemplateCard
	if len(raw) == 0 || json.Unmarshal(raw, &c) != nil {
		return "", 47001
	}
	switch {
	case c.CardType != "button_interaction":
		return "", 40008 // the fake knows button cards only
	case c.TaskID == "" || len(c.TaskID) > maxTaskIDBytes || !taskIDChars(c.TaskID) || s.card.tasks[c.TaskID]:
		return "", codeTaskID
	case len(c.Buttons) == 0 || len(c.Buttons) > maxCardButtons:
		return "", 40058
	case c.MainTitle.Title == "" && c.SubTitleText == "":
		return "", 41016 // "missing title"
	}
	for _, b := range c.Buttons {
		if b.Text == "" || len(b.Key) > maxButtonKeyBytes || b.Type == 0 && b.Key == "" {
			return "", 40058
		}
	}
	if c.SubTitleText != "" {
		return c.SubTitleText, 0
	}
	return c.MainTitle.Title, 0
}

// cardSent records a delivered card (raw, checked by cardContent) and
// returns its response_code; s.mu is held.
func (s *Server) cardSent(m SentMessage, raw json.RawMessage) string {
	var c TemplateCard
	_ = json.Unmarshal(raw, &c)
	if s.card.tasks == nil {
		s.card.tasks = map[string]bool{}
	}
	s.card.tasks[c.TaskID] = true
	code := s.newCode(c.TaskID)
	s.card.cards = append(s.card.cards, SentCard{ToUser: m.ToUser, MsgID: m.MsgID, ResponseCode: code, Card: c, At: m.At})
	return code
}

// updateBody is update_template_card's JSON.
type updateBody struct {
	UserIDs      []string        `json:"userids"`
	AtAll        int             `json:"atall"`
	AgentID      json.RawMessage `json:"agentid"`
	ResponseCode string          `json:"response_code"`
	Button       *struct {
		ReplaceName string `json:"replace_name"`
	} `json:"button"`
	TemplateCard *TemplateCard `json:"template_card"`
}

// handleUpdateCard is POST /cgi-bin/message/update_template_card: each
// response_code (a send's or a click's) works once.
func (s *Server) handleUpdateCard(w http.ResponseWriter, r *http.Request) {
	var body updateBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&body); err != nil {
		writeJSON(w, map[string]any{"errcode": 47001, "errmsg": "data format error"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	token := r.URL.Query().Get("access_token")
	task, known := s.card.codes[body.ResponseCode]
	_, agentOK := parseAgentID(body.AgentID)
	switch {
	case token == "":
		writeErr(w, 41001)
	case !s.tokens[token]:
		writeErr(w, 40014)
	case !agentOK:
		writeErr(w, 40056)
	case !known:
		writeErr(w, CodeResponseCodeUsed)
	case body.AtAll != 1 && len(body.UserIDs) == 0:
		writeErr(w, 81013)
	case (body.Button == nil) == (body.TemplateCard == nil):
		writeErr(w, 40058)
	default:
		delete(s.card.codes, body.ResponseCode)
		u := CardUpdate{TaskID: task, ResponseCode: body.ResponseCode, AtAll: body.AtAll, UserIDs: body.UserIDs,
			Card: body.TemplateCard, At: s.now()}
		if body.Button != nil {
			u.ReplaceName = body.Button.ReplaceName
		}
		s.card.updates = append(s.card.updates, u)
		s.changed.Broadcast()
		writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok"})
	}
}

func taskIDChars(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '-' || r == '@') {
			return false
		}
	}
	return true
}

// CardEventXML is a decrypted template_card_event as WeCom sends it to a
// self-built app when fromUser clicks the button whose key is eventKey on
// the card taskID; toUser is the corp id.
func CardEventXML(toUser, fromUser, eventKey, taskID, responseCode, agentID string, createTime int64) string {
	return fmt.Sprintf("<xml><ToUserName>%s</ToUserName><FromUserName>%s</FromUserName>"+
		"<CreateTime>%d</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[template_card_event]]></Event>"+
		"<EventKey>%s</EventKey><TaskId>%s</TaskId><CardType><![CDATA[button_interaction]]></CardType>"+
		"<ResponseCode>%s</ResponseCode><AgentID>%s</AgentID></xml>",
		cdata(toUser), cdata(fromUser), createTime, cdata(eventKey), cdata(taskID), cdata(responseCode), escape(agentID))
}

// PassiveReply is a decrypted passive reply to a callback, as WeCom
// reads it (the fields of update_button and update_template_card).
type PassiveReply struct {
	ToUserName   string `xml:"ToUserName"`
	FromUserName string `xml:"FromUserName"`
	MsgType      string `xml:"MsgType"`
	Button       struct {
		ReplaceName string `xml:"ReplaceName"`
	} `xml:"Button"`
}

// OpenPassiveReply checks a callback's answer as WeCom does: "" (an empty
// body: no reply) is nil; otherwise the encrypted envelope must verify
// with c (msg_signature over its TimeStamp, Nonce and Encrypt, the
// callback's nonce echoed) and decrypt for c's receiveid.
func OpenPassiveReply(c *wxbiz.Crypto, body string, query url.Values) (*PassiveReply, error) {
	if body == "" {
		return nil, nil
	}
	var env struct {
		Encrypt      string `xml:"Encrypt"`
		MsgSignature string `xml:"MsgSignature"`
		TimeStamp    string `xml:"TimeStamp"`
		Nonce        string `xml:"Nonce"`
	}
	if err := xml.Unmarshal([]byte(body), &env); err != nil {
		return nil, fmt.Errorf("wecomtest: passive reply: %w", err)
	}
	if env.Nonce != query.Get("nonce") {
		return nil, fmt.Errorf("wecomtest: passive reply nonce %q, callback's %q", env.Nonce, query.Get("nonce"))
	}
	if !c.VerifySignature(env.MsgSignature, env.TimeStamp, env.Nonce, env.Encrypt) {
		return nil, fmt.Errorf("wecomtest: passive reply: bad msg_signature")
	}
	plain, err := c.Decrypt(env.Encrypt)
	if err != nil {
		return nil, fmt.Errorf("wecomtest: passive reply: %w", err)
	}
	var p PassiveReply
	if err := xml.Unmarshal(plain, &p); err != nil {
		return nil, fmt.Errorf("wecomtest: passive reply: %w", err)
	}
	return &p, nil
}
