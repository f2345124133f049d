package aibot

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// botMessage is a decrypted AI bot callback, or the body of a long
// connection's aibot_msg_callback / aibot_event_callback frame: the two
// modes carry the same JSON.
type botMessage struct {
	MsgID       string `json:"msgid"`
	AIBotID     string `json:"aibotid"`
	ChatID      string `json:"chatid"`   // group chats only
	ChatType    string `json:"chattype"` // single | group
	CreateTime  int64  `json:"create_time"`
	ResponseURL string `json:"response_url"`
	From        struct {
		UserID string `json:"userid"`
	} `json:"from"`
	MsgType string    `json:"msgtype"`
	Text    *botText  `json:"text"`
	Voice   *botText  `json:"voice"` // the transcript
	Image   *botFile  `json:"image"`
	File    *botFile  `json:"file"`
	Video   *botFile  `json:"video"`
	Mixed   *botMixed `json:"mixed"`
	Quote   *botQuote `json:"quote"` // the message the user quoted (files.go)
	Stream  *struct {
		ID string `json:"id"`
	} `json:"stream"`
	Event *struct {
		EventType    string             `json:"eventtype"`
		TemplateCard *templateCardEvent `json:"template_card_event"` // a tap on a card (cardevent.go)
	} `json:"event"`
}

type botText struct {
	Content string `json:"content"`
}

type botMixed struct {
	Items []botMixedItem `json:"msg_item"`
}

type botMixedItem struct {
	MsgType string   `json:"msgtype"`
	Text    *botText `json:"text"`
	Image   *botFile `json:"image"`
}

// Bot message types beyond the shared ones.
const (
	botTypeStream  = "stream" // a stream refresh: WeCom asks for more of a stream
	botTypeMixed   = "mixed"
	botTypeVoice   = "voice"
	botTypeImage   = "image"
	botTypeFile    = "file"
	botTypeVideo   = "video"
	botEnterChat   = "enter_chat"         // a user opened the chat with the bot
	botDisconnects = "disconnected_event" // websocket: a newer connection took over
)

// botDecoders fill the type-specific parts of an Inbound. Types without an
// entry (location, ...) carry no text and keep their msgtype, which the
// gateway answers as unsupported. Attachments become Parts
// (files.go).
var botDecoders = map[string]func(m *botMessage, in *channels.Inbound){
	channels.TypeText: func(m *botMessage, in *channels.Inbound) {
		if m.Text != nil {
			in.Text = m.Text.Content
		}
	},
	botTypeVoice: func(m *botMessage, in *channels.Inbound) {
		// WeCom transcribes voice messages; the transcript is the message.
		in.MsgType = channels.TypeText
		if m.Voice != nil {
			in.Text = m.Voice.Content
		}
	},
	botTypeMixed: func(m *botMessage, in *channels.Inbound) {
		in.MsgType = channels.TypeText
		if m.Mixed != nil {
			setParts(in, m.Mixed.parts())
		}
	},
	botTypeImage: func(m *botMessage, in *channels.Inbound) { setParts(in, fileParts(channels.MediaImage, m.Image)) },
	botTypeFile:  func(m *botMessage, in *channels.Inbound) { setParts(in, fileParts(channels.MediaFile, m.File)) },
	botTypeVideo: func(m *botMessage, in *channels.Inbound) { setParts(in, fileParts(channels.MediaVideo, m.Video)) },
	channels.TypeEvent: func(m *botMessage, in *channels.Inbound) {
		if in.MsgID == "" && m.Event != nil {
			// Events are expected to carry a msgid; without one, dedupe
			// them the way WeCom advises for app events.
			in.MsgID = fmt.Sprintf("event:%s:%s:%d", m.Event.EventType, in.Sender.UserID, m.CreateTime)
		}
	},
}

// parseBotMessage decodes a decrypted callback or frame body. Errors wrap
// wxbiz.ErrMalformed: not JSON, or without the fields that identify the message.
// An event needs no from.userid: one that no user caused (disconnected_event)
// names none; accept then records nothing.
func parseBotMessage(plain []byte) (*botMessage, error) {
	var m botMessage
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, fmt.Errorf("%w: message: %v", wxbiz.ErrMalformed, err)
	}
	switch {
	case m.MsgType == "":
		return nil, fmt.Errorf("%w: message without msgtype", wxbiz.ErrMalformed)
	case m.MsgType == botTypeStream:
		if m.Stream == nil || m.Stream.ID == "" {
			return nil, fmt.Errorf("%w: stream refresh without stream.id", wxbiz.ErrMalformed)
		}
	case m.MsgType == channels.TypeEvent:
		if m.Event == nil || m.Event.EventType == "" {
			return nil, fmt.Errorf("%w: event without event.eventtype", wxbiz.ErrMalformed)
		}
	case m.From.UserID == "":
		return nil, fmt.Errorf("%w: %s message without from.userid", wxbiz.ErrMalformed, m.MsgType)
	case m.MsgID == "":
		return nil, fmt.Errorf("%w: %s message without msgid", wxbiz.ErrMalformed, m.MsgType)
	}
	if len(m.From.UserID) > maxUserIDBytes {
		// Replies keep room for the asker's mention on this limit.
		return nil, fmt.Errorf("%w: from.userid of %d bytes (WeCom's are at most %d)", wxbiz.ErrMalformed, len(m.From.UserID), maxUserIDBytes)
	}
	return &m, nil
}

// takesOver reports whether body, of an aibot_event_callback frame, is
// WeCom's disconnected_event: a newer connection took the bot over. It
// reads event.eventtype alone, as the official SDK does: the event names
// no user, so nothing else may be required of it.
func takesOver(body []byte) bool {
	var v struct {
		Event struct {
			EventType string `json:"eventtype"`
		} `json:"event"`
	}
	return json.Unmarshal(body, &v) == nil && v.Event.EventType == botDisconnects
}

// anonymous reports an event that names no user: there is no sender to
// record it for and no one to answer.
func (m *botMessage) anonymous() bool {
	return m.MsgType == channels.TypeEvent && m.From.UserID == ""
}

// eventType is the event's type, "" for a message.
func (m *botMessage) eventType() string {
	if m.MsgType != channels.TypeEvent || m.Event == nil {
		return ""
	}
	return m.Event.EventType
}

// isClick reports whether m is a tap on a template card (cardevent.go).
func (m *botMessage) isClick() bool { return m.eventType() == botEventCard }

// inbound turns a decoded message into the Inbound handed to the sink.
// plain is the decrypted payload (kept as Raw); reqID is the frame's req_id
// in websocket mode.
func (b *Bot) inbound(m *botMessage, plain []byte, reqID string) (channels.Inbound, error) {
	if m.From.UserID == "" || (m.MsgID == "" && m.MsgType != channels.TypeEvent) {
		// parseBotMessage lets through what is no message to store (a
		// stream refresh, an event that names no user); never the sink.
		return channels.Inbound{}, fmt.Errorf("%w: %s without msgid or from.userid", wxbiz.ErrMalformed, m.MsgType)
	}
	chatType, chatID := channels.ChatSingle, m.From.UserID
	if m.ChatType == channels.ChatGroup {
		chatType, chatID = channels.ChatGroup, m.ChatID
		if chatID == "" {
			return channels.Inbound{}, fmt.Errorf("%w: group message without chatid", wxbiz.ErrMalformed)
		}
	}
	in := channels.Inbound{
		Channel:  wxbiz.ChannelName,
		Account:  b.name,
		MsgID:    m.MsgID,
		MsgType:  m.MsgType,
		ChatID:   chatID,
		ChatType: chatType,
		// from.userid comes from the verified, decrypted payload (or the
		// authenticated socket): it is the sender.
		Sender: channels.Identity{UserID: m.From.UserID, CorpID: b.corpID},
		Raw:    json.RawMessage(plain),
	}
	if decode, ok := botDecoders[m.MsgType]; ok {
		decode(m, &in)
	}
	if chatType == channels.ChatGroup && in.MsgType != channels.TypeEvent {
		// WeCom delivers only the group messages that @ the bot.
		in.Mentioned = true
		in.Text = b.stripOwnMention(in.Text)
		for i, p := range in.Parts {
			if p.Media == nil {
				in.Parts[i].Text = b.stripOwnMention(p.Text)
			}
		}
	}
	in.Quote = m.Quote.quote()
	b.dateParts(in.Parts)
	rt, err := json.Marshal(botReplyTo{
		Mode:        b.mode,
		ChatID:      chatID,
		ChatType:    chatType,
		UserID:      m.From.UserID,
		MsgID:       in.MsgID,
		ResponseURL: m.ResponseURL,
		ReqID:       reqID,
		Received:    b.now().Unix(),
	})
	if err != nil {
		return channels.Inbound{}, fmt.Errorf("%w: %v", wxbiz.ErrMalformed, err)
	}
	in.ReplyTo = rt
	return in, nil
}

// maxMentionNameBytes bounds a bot name learned from a message.
const maxMentionNameBytes = 128

// stripOwnMention removes the bot's own @-mentions from a group message,
// wherever they stand, and keeps everyone else's: in "@王五 @HR助手
// 帮他查一下" the model needs "@王五" to know who "他" is.
//
// WeCom writes a mention as "@" and the name, followed by white space
// (U+2005) or the end of the text, and delivers only the group messages
// that mention the bot. The bot's name is not in the payload: it is
// bot_name when configured; otherwise a message with one mention is the
// bot's, which teaches the name for messages with several. Until then a
// message with several mentions keeps them all: dropping someone else's
// would change what it asks.
func (b *Bot) stripOwnMention(text string) string {
	name := b.mentionName
	if name == "" {
		if p := b.learnedName.Load(); p != nil {
			name = *p
		}
	}
	if name != "" {
		if out, ok := removeMentionsOf(text, name); ok {
			return out
		}
	}
	ms := mentionsIn(text)
	if len(ms) != 1 {
		return text
	}
	if only := text[ms[0].start+1 : ms[0].end]; b.mentionName == "" && len(only) <= maxMentionNameBytes {
		b.learnedName.Store(&only)
	}
	return strings.TrimSpace(cutMention(text, ms[0]))
}

// mentionSpan is text[start:end], an "@name" at the start of the text or
// after white space, up to the next white space.
type mentionSpan struct{ start, end int }

// mentionsIn finds the @-mentions in text, in order.
func mentionsIn(text string) []mentionSpan {
	var ms []mentionSpan
	afterSpace := true
	for i, r := range text {
		if r == '@' && afterSpace {
			end := len(text)
			if j := strings.IndexFunc(text[i:], unicode.IsSpace); j >= 0 {
				end = i + j
			}
			if end > i+1 {
				ms = append(ms, mentionSpan{i, end})
			}
		}
		afterSpace = unicode.IsSpace(r)
	}
	return ms
}

// removeMentionsOf removes every "@name" mention (and the white space
// after it) from text and reports whether there was one. A name may hold
// spaces ("HR 助手"), so it is matched whole, not as a mention found by
// mentionsIn. One pass: a message may hold thousands of mentions.
func removeMentionsOf(text, name string) (string, bool) {
	at := "@" + name
	var out strings.Builder
	kept, found := 0, false // text[kept:] is not yet copied to out
	for from := 0; from < len(text); {
		i := strings.Index(text[from:], at)
		if i < 0 {
			break
		}
		start, end := from+i, from+i+len(at)
		before, _ := utf8.DecodeLastRuneInString(text[:start])
		after, _ := utf8.DecodeRuneInString(text[end:])
		if (start == 0 || unicode.IsSpace(before)) && (end == len(text) || unicode.IsSpace(after)) {
			out.WriteString(text[kept:start])
			rest := strings.TrimLeftFunc(text[end:], unicode.IsSpace)
			kept, from, found = len(text)-len(rest), len(text)-len(rest), true
			continue
		}
		from = end
	}
	if !found {
		return text, false
	}
	out.WriteString(text[kept:])
	return strings.TrimSpace(out.String()), true
}

// cutMention removes the mention m and the white space after it.
func cutMention(text string, m mentionSpan) string {
	return text[:m.start] + strings.TrimLeftFunc(text[m.end:], unicode.IsSpace)
}

// fitStream keeps what a stream can show of s: all of it when it fits in
// MaxStreamBytes, else its first part as the delivery layer would cut it
// (at a paragraph or sentence, never inside a character). Only drafts and
// deadline notes get cut: a final first part fits (see Bot.limits).
func fitStream(s string) string {
	if len(s) <= MaxStreamBytes {
		return s
	}
	if parts := channels.SplitText(s, MaxStreamBytes); len(parts) > 0 {
		return parts[0]
	}
	return ""
}
