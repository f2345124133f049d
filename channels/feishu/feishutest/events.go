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
	// ParentID and RootID make the message a reply (Reply).
	ParentID, RootID string
	// SenderType is "user" (default) or "app": a bot's message, as a
	// quoted one may be (Server.AddMessage).
	SenderType string
}

// Mention is one mention of a message.
type Mention struct {
	Key, OpenID, UserID, Name string
}

// EventJSON is the decrypted v2 event Feishu sends for m.
func EventJSON(m Message) []byte {
	m = m.withDefaults()
	mentions := []map[string]any{}
	for _, mm := range m.Mentions {
		mentions = append(mentions, map[string]any{
			"key": mm.Key, "name": mm.Name, "tenant_key": m.TenantKey,
			"id": map[string]string{"open_id": mm.OpenID, "user_id": mm.UserID, "union_id": "on_" + mm.OpenID},
		})
	}
	message := map[string]any{
		"message_id": m.MessageID, "create_time": "1700000000000", "chat_id": m.ChatID,
		"chat_type": m.ChatType, "message_type": m.Type, "content": m.Content, "mentions": mentions,
	}
	if m.ParentID != "" {
		// Feishu sends both for a reply, and neither for a new message.
		message["parent_id"], message["root_id"] = m.ParentID, m.RootID
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
				"sender_type": m.SenderType, "tenant_key": m.TenantKey,
			},
			"message": message,
		},
	}
	b, _ := json.Marshal(ev)
	return b
}

// withDefaults fills the defaults of m's unset fields.
func (m Message) withDefaults() Message {
	if m.EventID == "" {
		m.EventID = "ev-" + m.MessageID
	}
	if m.ChatType == "" {
		m.ChatType = "p2p"
	}
	if m.Type == "" {
		m.Type = "text"
	}
	if m.SenderType == "" {
		m.SenderType = "user"
	}
	if m.Content == "" {
		m.Content = contentJSON(map[string]string{"text": m.Text})
	}
	return m
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

// contentJSON is a message's content: JSON in a string, as Feishu sends it.
func contentJSON(v any) string {
	b, _ := json.Marshal(v) // maps and slices of strings always marshal
	return string(b)
}

// Image makes m an image message (message_type image) of key.
func (m Message) Image(key string) Message {
	m.Type, m.Content = "image", contentJSON(map[string]string{"image_key": key})
	return m
}

// File makes m a file message of key, named name.
func (m Message) File(key, name string) Message {
	m.Type, m.Content = "file", contentJSON(map[string]string{"file_key": key, "file_name": name})
	return m
}

// Audio makes m a voice message of key (message_type audio), lasting d.
func (m Message) Audio(key string, d time.Duration) Message {
	m.Type, m.Content = "audio", contentJSON(map[string]any{"file_key": key, "duration": d.Milliseconds()})
	return m
}

// Video makes m a video message (message_type media) of key, with the
// cover image cover, named name.
func (m Message) Video(key, cover, name string) Message {
	m.Type = "media"
	m.Content = contentJSON(map[string]any{"file_key": key, "image_key": cover, "file_name": name, "duration": 2000})
	return m
}

// PostElement is one element of a post's paragraph, as received.
type PostElement map[string]any

// PostText is a text element.
func PostText(s string) PostElement {
	return PostElement{"tag": "text", "text": s, "style": []string{}}
}

// PostAt is a mention element: key is the mention key ("@_user_1") the
// message's Mentions resolve.
func PostAt(key string) PostElement {
	return PostElement{"tag": "at", "user_id": key, "user_name": "", "style": []string{}}
}

// PostLink is a link element.
func PostLink(text, href string) PostElement {
	return PostElement{"tag": "a", "text": text, "href": href, "style": []string{}}
}

// PostImage is an image element.
func PostImage(key string) PostElement { return PostElement{"tag": "img", "image_key": key} }

// PostVideo is a video element with its cover.
func PostVideo(key, cover string) PostElement {
	return PostElement{"tag": "media", "file_key": key, "image_key": cover}
}

// Post makes m a rich-text message as events carry it: bare
// {"title","content"}, one slice of elements per paragraph.
func (m Message) Post(title string, paragraphs ...[]PostElement) Message {
	m.Type, m.Content = "post", contentJSON(postBody(title, paragraphs))
	return m
}

// LocalePost makes m a rich-text message wrapped by locale, as posts are
// sent ({"zh_cn": {"title","content"}}).
func (m Message) LocalePost(locale, title string, paragraphs ...[]PostElement) Message {
	m.Type, m.Content = "post", contentJSON(map[string]any{locale: postBody(title, paragraphs)})
	return m
}

func postBody(title string, paragraphs [][]PostElement) map[string]any {
	if paragraphs == nil {
		paragraphs = [][]PostElement{}
	}
	return map[string]any{"title": title, "content": paragraphs}
}

// Reply makes m a reply to parentID in the thread rootID (parentID when
// empty: a reply to a message that is itself no reply).
func (m Message) Reply(parentID, rootID string) Message {
	if rootID == "" {
		rootID = parentID
	}
	m.ParentID, m.RootID = parentID, rootID
	return m
}
