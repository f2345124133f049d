package feishutest

import (
	"mime"
	"net/http"
	"strconv"
)

// Codes of 获取消息中的资源文件 and 获取指定消息的内容 the fake answers with,
// as Feishu documents them.
const (
	CodeMessageDeleted   = 230110 // the message was deleted
	CodeBadMessageParam  = 230001 // get message: no such message_id
	CodeBadResourceParam = 234001 // resources: a bad type (or, in the fake, the wrong one)
	CodeFileNotInMessage = 234003 // resources: the key is not of that message
	CodeAppNotInChat     = 234004 // resources: the bot is not in the message's chat
)

// Resource is a file of a message, served by GET
// /open-apis/im/v1/messages/:message_id/resources/:file_key?type=.
type Resource struct {
	MessageID, Key string
	// Type is "image" or "file": the type the key must be asked for with.
	// (Feishu documents no answer to the wrong one; the fake refuses it
	// with 234001, so that a test sees the type the channel asked for.)
	Type string
	Data []byte
	Name string // sent in Content-Disposition; empty: no such header
	// ContentType is sent as is; default application/octet-stream.
	ContentType string
}

type resource struct {
	Resource
	expired      bool
	status, code int // an injected answer, when status is not 0
}

// storedMessage is a message GET /open-apis/im/v1/messages/:id reads.
type storedMessage struct {
	Message
	deleted bool
}

// AddResource serves r until Expire.
func (s *Server) AddResource(r Resource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources[r.Key] = &resource{Resource: r}
}

// Expire makes the resource key answer 230110, as it does once its
// message is deleted (Feishu keeps a message's files as long as the
// message).
func (s *Server) Expire(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.resources[key]; ok {
		r.expired = true
	}
}

// FailResource makes the resource key answer HTTP status with Feishu's
// {"code","msg"} of code (status 200: the JSON error Feishu sends on a
// 200), or with a plain-text body when code is 0.
func (s *Server) FailResource(key string, status, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.resources[key]; ok {
		r.status, r.code = status, code
	}
}

// ResourceGets counts the authorised requests for the resource key.
func (s *Server) ResourceGets(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resourceGets[key]
}

// AddMessage stores m (its id, chat, type, content, sender and mentions)
// for GET /open-apis/im/v1/messages/:message_id, as the message a reply
// quotes.
func (s *Server) AddMessage(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stored[m.MessageID] = &storedMessage{Message: m.withDefaults()}
}

// DeleteMessage makes the stored message id answer 230110.
func (s *Server) DeleteMessage(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.stored[id]; ok {
		m.deleted = true
	}
}

// MessageGets counts the authorised GET /open-apis/im/v1/messages/:id.
func (s *Server) MessageGets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.messageGets
}

func (s *Server) handleResource(w http.ResponseWriter, r *http.Request) {
	id, key, typ := r.PathValue("id"), r.PathValue("key"), r.URL.Query().Get("type")
	s.mu.Lock()
	s.resourceGets[key]++
	var res resource
	p, ok := s.resources[key]
	if ok {
		res = *p
	}
	s.notify()
	s.mu.Unlock()
	switch {
	case typ != "image" && typ != "file":
		answer(w, 400, CodeBadResourceParam, "Invalid request param.", nil)
	case !ok || res.MessageID != id:
		answer(w, 400, CodeFileNotInMessage, "File not in message.", nil)
	case res.expired:
		answer(w, 400, CodeMessageDeleted, "Action unavailable as the message has been deleted.", nil)
	case res.status != 0 && res.code == 0:
		http.Error(w, http.StatusText(res.status), res.status)
	case res.status != 0:
		answer(w, res.status, res.code, "injected failure", nil)
	case typ != res.Type:
		answer(w, 400, CodeBadResourceParam, "Invalid request param: type "+typ+" of a "+res.Type, nil)
	default:
		ct := res.ContentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		w.Header().Set("Content-Type", ct)
		if res.Name != "" {
			w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": res.Name}))
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(res.Data)))
		_, _ = w.Write(res.Data)
	}
}

func (s *Server) handleGetMessage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.messageGets++
	var m storedMessage
	p, ok := s.stored[r.PathValue("id")]
	if ok {
		m = *p
	}
	s.notify()
	s.mu.Unlock()
	switch {
	case !ok:
		answer(w, 400, CodeBadMessageParam, "Your request contains an invalid request parameter.", nil)
		return
	case m.deleted:
		answer(w, 400, CodeMessageDeleted, "Action unavailable as the message has been deleted.", nil)
		return
	}
	idType := r.URL.Query().Get("user_id_type")
	if idType == "" {
		idType = "open_id"
	}
	userID := func(openID, userID string) string {
		if idType == "user_id" {
			return userID
		}
		return openID
	}
	sender := map[string]string{"id": userID(m.OpenID, m.UserID), "id_type": idType, "sender_type": m.SenderType, "tenant_key": m.TenantKey}
	if m.SenderType == "app" {
		sender["id"], sender["id_type"] = s.appID, "app_id"
	}
	mentions := []map[string]string{}
	for _, mm := range m.Mentions {
		mentions = append(mentions, map[string]string{
			"key": mm.Key, "id": userID(mm.OpenID, mm.UserID), "id_type": idType, "name": mm.Name, "tenant_key": m.TenantKey,
		})
	}
	item := map[string]any{
		"message_id": m.MessageID, "msg_type": m.Type, "create_time": "1700000000000", "update_time": "1700000000000",
		"deleted": false, "updated": false, "chat_id": m.ChatID, "sender": sender,
		"body": map[string]string{"content": m.Content}, "mentions": mentions,
	}
	if m.ParentID != "" {
		item["parent_id"], item["root_id"] = m.ParentID, m.RootID
	}
	answer(w, 200, 0, "success", map[string]any{"data": map[string]any{"items": []any{item}}})
}
