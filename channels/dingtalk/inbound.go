package dingtalk

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// message is a robot message as DingTalk sends it, in an HTTP callback body
// or a Stream CALLBACK frame's data.
type message struct {
	MsgID            string                   `json:"msgId"`
	MsgType          string                   `json:"msgtype"`
	Text             struct{ Content string } `json:"text"`
	Content          json.RawMessage          `json:"content"` // richText and attachments (files.go)
	ConversationID   string                   `json:"conversationId"`
	ConversationType string                   `json:"conversationType"` // "1" single, "2" group
	ConversationName string                   `json:"conversationTitle"`
	SenderID         string                   `json:"senderId"`
	SenderStaffID    string                   `json:"senderStaffId"`
	SenderNick       string                   `json:"senderNick"`
	SenderCorpID     string                   `json:"senderCorpId"`
	ChatbotUserID    string                   `json:"chatbotUserId"`
	IsInAtList       bool                     `json:"isInAtList"`
	AtUsers          []struct {
		DingtalkID string `json:"dingtalkId"`
		StaffID    string `json:"staffId"`
	} `json:"atUsers"`
	RobotCode                 string `json:"robotCode"`
	SessionWebhook            string `json:"sessionWebhook"`
	SessionWebhookExpiredTime int64  `json:"sessionWebhookExpiredTime"` // Unix ms
	CreateAt                  int64  `json:"createAt"`                  // Unix ms
}

// Conversation types as DingTalk sends them (strings).
const (
	conversationSingle = "1"
	conversationGroup  = "2"
)

// replyTo is a robot's Inbound.ReplyTo: everything Send needs to answer in
// the same conversation on any replica, for as long as the outbox retries.
type replyTo struct {
	// Group is true for a group chat (reply to Conversation), false for a
	// single chat (reply to User).
	Group        bool   `json:"group,omitempty"`
	Conversation string `json:"conversation"` // openConversationId
	User         string `json:"user"`         // the asker's staffId
	Nick         string `json:"nick,omitempty"`
	// Webhook is the message's session webhook, valid until WebhookExpires
	// (Unix ms); it answers without a token.
	Webhook        string `json:"webhook,omitempty"`
	WebhookExpires int64  `json:"webhook_expires,omitempty"`
	// Card is the outTrackId of the AI card that streams the answer, when
	// the robot streams (card.go).
	Card string `json:"card,omitempty"`
	// Received is when Hermes received the message (Unix ms).
	Received int64 `json:"received"`
}

// decodeMessage turns a verified robot message into an Inbound. ok is false
// for a message Hermes cannot attribute to a staff member (an external
// contact: no senderStaffId), which is acknowledged but not stored. The
// sender's corp is always the robot's corp_id: a senderCorpId naming
// another corp is refused, since a staff id means something only within
// its corp and an HTTP body is not signed. When ok is false, and with
// ErrCorp, in names only the message (Channel, Account, MsgID).
//
// Errors wrap ErrMalformed or ErrCorp.
func (r *robot) decodeMessage(data []byte) (in channels.Inbound, ok bool, err error) {
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		return channels.Inbound{}, false, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if m.MsgID == "" || m.ConversationID == "" || m.MsgType == "" {
		return channels.Inbound{}, false, fmt.Errorf("%w: message lacks msgId, conversationId or msgtype", ErrMalformed)
	}
	only := channels.Inbound{Channel: ChannelName, Account: r.cfg.Name, MsgID: m.MsgID}
	if m.SenderCorpID != "" && m.SenderCorpID != r.cfg.CorpID {
		return only, false, fmt.Errorf("%w: senderCorpId %q is not corp_id %q", ErrCorp, m.SenderCorpID, r.cfg.CorpID)
	}
	if m.SenderStaffID == "" {
		return only, false, nil
	}
	if !r.trustedWebhook(m.SessionWebhook) {
		// The signature covers the timestamp, not the body: never POST a
		// reply anywhere but DingTalk's own hosts.
		m.SessionWebhook, m.SessionWebhookExpiredTime = "", 0
	}
	now := r.now()
	rt := replyTo{
		Group: m.ConversationType == conversationGroup, Conversation: m.ConversationID,
		User: m.SenderStaffID, Nick: m.SenderNick,
		Webhook: m.SessionWebhook, WebhookExpires: m.SessionWebhookExpiredTime,
		Received: now.UnixMilli(),
	}
	if r.cfg.CardTemplateID != "" {
		rt.Card = outTrackID(r.cfg.Name, m.MsgID)
	}
	raw, err := json.Marshal(rt)
	if err != nil {
		return channels.Inbound{}, false, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	in = channels.Inbound{
		Channel: ChannelName, Account: r.cfg.Name, MsgID: m.MsgID, MsgType: m.MsgType,
		ChatID: m.ConversationID, ChatType: channels.ChatSingle,
		// senderStaffId comes from the verified callback (or the
		// authenticated stream), never from message text; the corp is the
		// robot's, checked above.
		Sender:  channels.Identity{UserID: m.SenderStaffID, Name: m.SenderNick, CorpID: r.cfg.CorpID},
		ReplyTo: raw,
		Raw:     json.RawMessage(data),
	}
	if rt.Group {
		in.ChatType = channels.ChatGroup
		in.Mentioned = m.IsInAtList || m.mentions(m.ChatbotUserID)
	}
	if decode, known := contentDecoders[m.MsgType]; known {
		if parts, ok := decode(&m); ok {
			r.setParts(&in, parts)
		}
	}
	return in, true, nil
}

// Robot message types (msgtype) beyond text.
const (
	msgRichText = "richText"
	msgPicture  = "picture"
	msgFile     = "file"
	msgAudio    = "audio"
	msgVideo    = "video"
)

// contentDecoders turn a message's content into its parts, in the order
// the user wrote them; ok is false for content they cannot read (then the
// message keeps its msgtype and is answered as unsupported). Types
// without an entry (markdown, interactive cards, ...) are unsupported too.
// Attachments are decoded in files.go.
var contentDecoders = map[string]func(m *message) (parts []channels.Part, ok bool){
	channels.TypeText: func(m *message) ([]channels.Part, bool) {
		return []channels.Part{{Text: m.Text.Content}}, true
	},
	msgRichText: (*message).richTextParts,
	msgPicture:  func(m *message) ([]channels.Part, bool) { return m.fileParts(channels.MediaImage) },
	msgFile:     func(m *message) ([]channels.Part, bool) { return m.fileParts(channels.MediaFile) },
	msgVideo:    func(m *message) ([]channels.Part, bool) { return m.fileParts(channels.MediaVideo) },
	msgAudio:    (*message).audioParts,
}

// setParts makes in a media message of parts when one of them is an
// attachment, a text message otherwise; Text is their text either way.
// The robot's own mention is stripped from each text part, as from a
// text message, and a text part left empty is dropped.
func (r *robot) setParts(in *channels.Inbound, parts []channels.Part) {
	var kept []channels.Part
	var text []string
	media := false
	for _, p := range parts {
		if p.Media != nil {
			media = true
			kept = append(kept, p)
			continue
		}
		if t := r.stripMention(p.Text); t != "" {
			kept = append(kept, channels.Part{Text: t})
			text = append(text, t)
		}
	}
	in.Text = strings.Join(text, "\n")
	if media {
		in.MsgType, in.Parts = channels.TypeMedia, kept
	} else {
		in.MsgType = channels.TypeText
	}
}

// mentions reports whether dingtalkID is among the @-mentioned users.
func (m *message) mentions(dingtalkID string) bool {
	if dingtalkID == "" {
		return false
	}
	for _, u := range m.AtUsers {
		if u.DingtalkID == dingtalkID {
			return true
		}
	}
	return false
}

// stripMention removes the robot's own @-mention from the start of text.
// DingTalk usually removes it already and leaves the space after it.
func (r *robot) stripMention(text string) string {
	text = strings.TrimSpace(text)
	if r.cfg.RobotName != "" {
		text = strings.TrimSpace(strings.TrimPrefix(text, "@"+r.cfg.RobotName))
	}
	return text
}

// trustedWebhook reports whether u is a session webhook on DingTalk's API
// hosts (the configured bases).
func (r *robot) trustedWebhook(u string) bool {
	return u != "" && (strings.HasPrefix(u, r.cfg.APIBaseURL+"/") || strings.HasPrefix(u, r.cfg.OAPIBaseURL+"/"))
}

// outTrackID is the AI card id of a message's answer: derived from the
// message, so every delivery of it names the same card.
func outTrackID(account, msgID string) string {
	sum := sha256.Sum256([]byte(account + "\x00" + msgID))
	return "hermes-" + hex.EncodeToString(sum[:16])
}

// received is when the message reached Hermes.
func (rt replyTo) received() time.Time { return time.UnixMilli(rt.Received) }
