package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hermes-gw/hermes/channels"
)

// EventMessageReceive is the one event type Hermes answers.
const EventMessageReceive = "im.message.receive_v1"

// eventV2 is an event of schema 2.0, decrypted.
type eventV2 struct {
	Schema string          `json:"schema"`
	Header eventHeader     `json:"header"`
	Event  json.RawMessage `json:"event"`
}

type eventHeader struct {
	EventID    string `json:"event_id"`
	EventType  string `json:"event_type"`
	CreateTime string `json:"create_time"`
	Token      string `json:"token"`
	AppID      string `json:"app_id"`
	TenantKey  string `json:"tenant_key"`
}

// userIDs are the ids Feishu gives a user.
type userIDs struct {
	OpenID  string `json:"open_id"`
	UserID  string `json:"user_id"`
	UnionID string `json:"union_id"`
}

type mention struct {
	Key       string  `json:"key"` // "@_user_1"
	ID        userIDs `json:"id"`
	Name      string  `json:"name"`
	TenantKey string  `json:"tenant_key"`
}

// messageReceive is im.message.receive_v1's event.
type messageReceive struct {
	Sender struct {
		SenderID   userIDs `json:"sender_id"`
		SenderType string  `json:"sender_type"`
		TenantKey  string  `json:"tenant_key"`
	} `json:"sender"`
	Message struct {
		MessageID   string    `json:"message_id"`
		RootID      string    `json:"root_id"`
		ParentID    string    `json:"parent_id"`
		CreateTime  string    `json:"create_time"`
		ChatID      string    `json:"chat_id"`
		ThreadID    string    `json:"thread_id"`
		ChatType    string    `json:"chat_type"` // p2p | group | topic_group
		MessageType string    `json:"message_type"`
		Content     string    `json:"content"` // a JSON string
		Mentions    []mention `json:"mentions"`
	} `json:"message"`
}

// replyTo is this channel's Inbound.ReplyTo: everything Send and the
// streaming card need, on any replica, after any restart.
type replyTo struct {
	MessageID string `json:"message_id"` // the message to reply to; empty for a push (a report)
	// ReceiveIDType says what ChatID is for a push with no message to reply
	// to: "chat_id" for a group, the app's id type for a user.
	ReceiveIDType string `json:"receive_id_type,omitempty"`
	ChatID        string `json:"chat_id"`         // its chat
	Group         bool   `json:"group,omitempty"` // a group chat: mention the asker
	OpenID        string `json:"open_id"`         // the asker, for <at user_id="...">
	// ParentID is the message a reply quotes (parent_id): the event names
	// it without its content, so the worker reads it (ResolveQuote).
	ParentID string `json:"parent_id,omitempty"`
}

// decodeEvent turns a decrypted, verified event into an Inbound. ok is
// false for an event Hermes does not answer (another event type, a message
// from a bot): it is acknowledged and nothing is stored.
//
// Errors wrap ErrMalformed, ErrOtherApp or channels.ErrUnavailable (the
// bot's identity could not be read to tell whether it was mentioned;
// Feishu retries).
func (a *App) decodeEvent(ctx context.Context, plain []byte) (in channels.Inbound, ok bool, err error) {
	var ev eventV2
	if err := json.Unmarshal(plain, &ev); err != nil {
		return in, false, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if ev.Schema != "2.0" {
		return in, false, fmt.Errorf("%w: schema %q, want 2.0 (subscribe with the v2 event format)", ErrMalformed, ev.Schema)
	}
	if ev.Header.AppID != "" && ev.Header.AppID != a.cfg.AppID {
		return in, false, fmt.Errorf("%w: %q, not %q", ErrOtherApp, ev.Header.AppID, a.cfg.AppID)
	}
	if ev.Header.EventType == EventCardAction {
		return a.decodeCardAction(ev, plain)
	}
	if ev.Header.EventType != EventMessageReceive {
		return in, false, nil
	}
	var m messageReceive
	if err := json.Unmarshal(ev.Event, &m); err != nil {
		return in, false, fmt.Errorf("%w: %s: %v", ErrMalformed, ev.Header.EventType, err)
	}
	msg := m.Message
	if msg.MessageID == "" || msg.ChatID == "" || m.Sender.SenderID.OpenID == "" {
		return in, false, fmt.Errorf("%w: message without message_id, chat_id or sender open_id", ErrMalformed)
	}
	if m.Sender.SenderType != "" && m.Sender.SenderType != "user" {
		return in, false, nil
	}
	userID := m.Sender.SenderID.OpenID
	if a.cfg.IDType == IDTypeUserID {
		userID = m.Sender.SenderID.UserID
		if userID == "" {
			a.log.Error("feishu: event without the sender's user_id; the message is dropped: grant the scope "+
				"contact:user.employee_id:readonly (获取用户 user ID) and publish a version, or set id_type: open_id",
				"message_id", msg.MessageID)
			return in, false, nil
		}
	}
	tenant := ev.Header.TenantKey
	if tenant == "" {
		tenant = m.Sender.TenantKey
	}
	in = channels.Inbound{
		Channel:  ChannelName,
		Account:  a.cfg.Name,
		MsgID:    msg.MessageID, // event_id changes per push; message_id does not
		MsgType:  msg.MessageType,
		ChatID:   msg.ChatID,
		ChatType: channels.ChatSingle,
		Sender:   channels.Identity{UserID: userID, CorpID: tenant},
		Raw:      json.RawMessage(plain),
	}
	if msg.ChatType != "p2p" {
		in.ChatType = channels.ChatGroup
	}
	parts, known := messageParts(msg.MessageID, msg.MessageType, msg.Content)
	if len(msg.Mentions) > 0 {
		botID, err := a.botOpenID(ctx)
		if err != nil {
			return in, false, fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
		}
		r := newMentionResolver(msg.Mentions, botID)
		in.Mentioned = r.mentioned
		for i := range parts {
			if parts[i].Media != nil {
				continue
			}
			if parts[i].Text, err = r.resolve(parts[i].Text); err != nil {
				return in, false, err
			}
		}
	}
	switch {
	case known:
		setParts(&in, parts)
		if len(in.Text) > maxPayloadBytes {
			return in, false, fmt.Errorf("%w: text with mentions %w", ErrMalformed, errOverCap)
		}
	case in.MsgType == channels.TypeMedia:
		// Feishu's "media" is a video; one Hermes cannot read must not pass
		// for channels.TypeMedia, which promises an attachment.
		in.MsgType = unreadableVideo
	}
	rt, err := json.Marshal(replyTo{
		MessageID: msg.MessageID, ChatID: msg.ChatID, Group: in.ChatType == channels.ChatGroup,
		OpenID: m.Sender.SenderID.OpenID, ParentID: msg.ParentID,
	})
	if err != nil {
		return in, false, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	in.ReplyTo = rt
	return in, true, nil
}

// unreadableVideo is the MsgType of a Feishu video message whose content
// is not what Feishu sends: answered as unsupported.
const unreadableVideo = "video"

// maxMentionKey bounds a mention key: Feishu's are "@_user_<n>", and the
// replacer's work per byte of text grows with the longest key.
const maxMentionKey = 32

// mentionResolver rewrites the mention keys of one message's texts (a
// post's text parts share its mentions): each key ("@_user_1") becomes
// "@name", and the bot's own is removed; mentioned reports whether the bot
// was among them. A key that is not of Feishu's form is left in the text.
type mentionResolver struct {
	replacer  *strings.Replacer
	mentioned bool
}

func newMentionResolver(mentions []mention, botOpenID string) mentionResolver {
	type pair struct{ key, repl string }
	mentioned := false
	pairs := make([]pair, 0, 2*len(mentions))
	for _, m := range mentions {
		if !strings.HasPrefix(m.Key, "@_") || len(m.Key) > maxMentionKey {
			continue
		}
		if m.ID.OpenID != "" && m.ID.OpenID == botOpenID {
			mentioned = true
			pairs = append(pairs, pair{m.Key + " ", ""}, pair{m.Key, ""})
			continue
		}
		pairs = append(pairs, pair{m.Key, "@" + m.Name})
	}
	// Longest keys first: "@_user_1" must not eat the start of "@_user_10"
	// (the replacer prefers the earlier of two keys matching at one place).
	slices.SortStableFunc(pairs, func(a, b pair) int { return len(b.key) - len(a.key) })
	args := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, p.key, p.repl)
	}
	return mentionResolver{replacer: strings.NewReplacer(args...), mentioned: mentioned}
}

// resolve rewrites text's mention keys and trims it.
//
// Errors wrap ErrMalformed: the names would grow the text past
// maxPayloadBytes (a long name behind a key the text repeats).
func (r mentionResolver) resolve(text string) (string, error) {
	var out cappedBuilder
	if _, err := r.replacer.WriteString(&out, text); err != nil {
		return "", fmt.Errorf("%w: text with mentions %w", ErrMalformed, err)
	}
	return strings.TrimSpace(out.String()), nil
}

// cappedBuilder is a strings.Builder that refuses to grow past
// maxPayloadBytes.
type cappedBuilder struct{ strings.Builder }

var errOverCap = fmt.Errorf("over %d bytes", maxPayloadBytes)

func (b *cappedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxPayloadBytes {
		return 0, errOverCap
	}
	return b.Builder.Write(p)
}

func (b *cappedBuilder) WriteString(s string) (int, error) {
	if b.Len()+len(s) > maxPayloadBytes {
		return 0, errOverCap
	}
	return b.Builder.WriteString(s)
}
