package feishutest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hermes-gw/hermes/channels/feishu"
)

// Message describes an im.message.receive_v1 event.
type Message struct {
	EventID   string // default "ev-" + MessageID
	MessageID string
	ChatID    string
	ChatType  string // "p2p" (default) or "group"
	OpenID    string // sender
	UserID    string // sender; empty to test a missing scope
	TenantKey string
	AppID     string
	Token     string // verification token in the header
	Text      string // with "@_user_N" keys where Mentions go
	Mentions  []Mention
	Type      string // message_type, default "text"
	Content   string // raw content JSON, overrides Text
}

// Mention is one mention of a message.
type Mention struct {
	Key, OpenID, UserID, Name string
}

// EventJSON is the decrypted v2 event Feishu sends for m.
func EventJSON(m Message) []byte {
	if m.EventID == "" {
		m.EventID = "ev-" + m.MessageID
	}
	if m.ChatType == "" {
		m.ChatType = "p2p"
	}
	if m.Type == "" {
		m.Type = "text"
	}
	content := m.Content
	if content == "" {
		b, _ := json.Marshal(map[string]string{"text": m.Text})
		content = string(b)
	}
	mentions := []map[string]any{}
	for _, mm := range m.Mentions {
		mentions = append(mentions, map[string]any{
			"key": mm.Key, "name": mm.Name, "tenant_key": m.TenantKey,
			"id": map[string]string{"open_id": mm.OpenID, "user_id": mm.UserID, "union_id": "on_" + mm.OpenID},
		})
	}
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]string{
			"event_id": m.EventID, "event_type": feishu.EventMessageReceive, "create_time": "1700000000000",
			"token": m.Token, "app_id": m.AppID, "tenant_key": m.TenantKey,
		},
		"event": map[string]any{
			"sender": map[string]any{
				"sender_id":   map[string]string{"open_id": m.OpenID, "user_id": m.UserID, "union_id": "on_" + m.OpenID},
				"sender_type": "user", "tenant_key": m.TenantKey,
			},
			"message": map[string]any{
				"message_id": m.MessageID, "create_time": "1700000000000", "chat_id": m.ChatID,
				"chat_type": m.ChatType, "message_type": m.Type, "content": content, "mentions": mentions,
			},
		},
	}
	b, _ := json.Marshal(ev)
	return b
}

// URLVerificationJSON is the plain URL verification Feishu posts when the
// request URL is saved.
func URLVerificationJSON(challenge, token string) []byte {
	b, _ := json.Marshal(map[string]string{"challenge": challenge, "token": token, "type": "url_verification"})
	return b
}

var nonces atomic.Int64

// EncryptedRequest is the POST Feishu sends with an Encrypt Key: body
// {"encrypt": ...} and the signature headers over it, signed at ts.
func EncryptedRequest(c *feishu.Crypto, plain []byte, ts time.Time) (http.Header, []byte) {
	enc, err := c.Encrypt(plain)
	if err != nil {
		panic(fmt.Sprintf("feishutest: encrypt: %v", err))
	}
	body, _ := json.Marshal(map[string]string{"encrypt": enc})
	tsStr := strconv.FormatInt(ts.Unix(), 10)
	nonce := "n" + strconv.FormatInt(nonces.Add(1), 10)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(feishu.HeaderTimestamp, tsStr)
	h.Set(feishu.HeaderNonce, nonce)
	h.Set(feishu.HeaderSignature, c.Signature(tsStr, nonce, body))
	return h, body
}

// Post sends an event request to url and returns the status and body.
func Post(client *http.Client, url string, h http.Header, body []byte) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return 0, "", err
	}
	req.Header = h.Clone()
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
