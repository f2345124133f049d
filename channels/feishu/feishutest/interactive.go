package feishutest

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels/feishu"
)

// Patch is one PATCH of a sent card (更新应用发送的消息卡片).
type Patch struct {
	MessageID string
	Content   string // the card JSON as sent
	At        time.Time
}

// CardView is what a card JSON 1.0 shows: its title, its markdown text
// and its buttons.
type CardView struct {
	Title   string
	Text    string
	Buttons []Button
	Multi   bool // config.update_multi
}

// Button is one button of a card and the value a tap carries back.
type Button struct {
	Label string
	Value map[string]any
}

// ParseCard reads a card JSON 1.0 as the client would show it.
func ParseCard(content string) CardView {
	var c struct {
		Config struct {
			UpdateMulti bool `json:"update_multi"`
		} `json:"config"`
		Header struct {
			Title struct {
				Content string `json:"content"`
			} `json:"title"`
		} `json:"header"`
		Elements []struct {
			Tag     string `json:"tag"`
			Content string `json:"content"`
			Actions []struct {
				Tag  string `json:"tag"`
				Text struct {
					Content string `json:"content"`
				} `json:"text"`
				Value map[string]any `json:"value"`
			} `json:"actions"`
		} `json:"elements"`
	}
	_ = json.Unmarshal([]byte(content), &c)
	v := CardView{Title: c.Header.Title.Content, Multi: c.Config.UpdateMulti}
	for _, el := range c.Elements {
		switch el.Tag {
		case "markdown":
			v.Text = strings.TrimSpace(strings.Join([]string{v.Text, el.Content}, "\n"))
		case "action":
			for _, a := range el.Actions {
				v.Buttons = append(v.Buttons, Button{Label: a.Text.Content, Value: a.Value})
			}
		}
	}
	return v
}

// FailInteractive makes interactive messages (cards) answer code, as for a
// missing scope (99991672) or content Feishu rejects (230099); 0 ends it.
func (s *Server) FailInteractive(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failInteractive = code
}

// Patches returns every card PATCH, in order.
func (s *Server) Patches() []Patch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Patch(nil), s.patches...)
}

// handlePatch updates a card the app sent, as Feishu does: only an
// interactive message sent with update_multi, and only to a card that
// keeps it.
func (s *Server) handlePatch(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Content string `json:"content"`
	}
	if err := decode(r, &in); err != nil || !json.Valid([]byte(in.Content)) {
		answer(w, 400, 230001, "invalid message content", nil)
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	defer s.mu.Unlock()
	var sent *Reply
	for i := range s.replies {
		if s.replies[i].MessageID == id && !s.replies[i].Duplicate {
			sent = &s.replies[i]
		}
	}
	switch {
	case sent == nil:
		answer(w, 400, 230001, "message not found", nil)
		return
	case sent.MsgType != "interactive":
		answer(w, 400, 230001, "not an interactive message", nil)
		return
	case !ParseCard(sent.Content).Multi || !ParseCard(in.Content).Multi:
		answer(w, 400, 230099, "update_multi must be true before and after", nil)
		return
	}
	s.patches = append(s.patches, Patch{MessageID: id, Content: in.Content, At: s.now()})
	s.notify()
	answer(w, 200, 0, "success", nil)
}

// CardAction describes a card.action.trigger callback: a tap on a button.
type CardAction struct {
	EventID   string
	OpenID    string // operator (the clicker)
	UserID    string // operator's user_id; empty as over the long connection
	Token     string // verification token in the header
	AppID     string
	TenantKey string
	Value     any    // the button's value, as the card carried it
	MessageID string // context.open_message_id
	ChatID    string // context.open_chat_id
}

// CardActionJSON is the decrypted v2 callback Feishu sends for a.
func CardActionJSON(a CardAction) []byte {
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]string{
			"event_id": a.EventID, "event_type": feishu.EventCardAction, "create_time": "1700000000000000",
			"token": a.Token, "app_id": a.AppID, "tenant_key": a.TenantKey,
		},
		"event": map[string]any{
			"operator": map[string]string{"tenant_key": a.TenantKey, "open_id": a.OpenID, "user_id": a.UserID, "union_id": "on_" + a.OpenID},
			"token":    "c-" + a.EventID,
			"action":   map[string]any{"tag": "button", "value": a.Value},
			"host":     "im_message",
			"context":  map[string]string{"open_message_id": a.MessageID, "open_chat_id": a.ChatID},
		},
	}
	b, _ := json.Marshal(ev)
	return b
}
