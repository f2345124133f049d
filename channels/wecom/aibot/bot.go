package aibot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// Limits and deadlines of AI bots (智能机器人), from WeCom's documentation.
const (
	// MaxStreamBytes: a stream's content (the whole text so far), and a
	// markdown push (response_url, aibot_send_msg), is at most 20480 bytes
	// of UTF-8.
	MaxStreamBytes = 20480
	// StreamLifetime: WeCom refreshes a stream for at most 6 minutes after
	// the user's message; a stream must be finished before then.
	StreamLifetime = 6 * time.Minute
	// ResponseURLLifetime: a response_url accepts one POST within 1 hour of
	// the message.
	ResponseURLLifetime = time.Hour
	// BotPushPerMinute: WeCom allows about 30 proactive pushes per minute
	// (and 1000 per hour) to one conversation.
	BotPushPerMinute = 30
	// maxUserIDBytes: a WeCom UserID is at most 64 bytes.
	maxUserIDBytes = 64
)

// Our own margins around WeCom's limits. (A stream is finished
// channels.LiveMargin before StreamLifetime runs out.)
const (
	// mentionReserve is room kept in every message for the asker's mention
	// in group chats: "<@" + UserID + ">\n".
	mentionReserve = 2 + maxUserIDBytes + 2
)

// Bot is one AI bot (智能机器人), by callback (WeCom POSTs encrypted JSON to
// /wecom/bot/<name>/callback) or by long connection (Hermes dials WeCom;
// no public URL needed). It is safe for concurrent use.
type Bot struct {
	name   string
	mode   string
	corpID string
	now    func() time.Time
	log    *slog.Logger
	msgs   channels.ChannelMessages
	env    channels.Env // CountPanic
	// fetch is the one way to a URL that came inside a callback or frame:
	// only WeCom's hosts (fetch_hosts), never an internal address.
	fetch *channels.FetchGuard
	// respClient POSTs to response_urls (a JSON answer: responseURLTimeout);
	// mediaClient downloads attachments, bounded by the download's context
	// (timing.Media), not by a client timeout a large file would outlast.
	respClient, mediaClient *http.Client

	// The bot's name as WeCom writes its @-mention in group messages:
	// configured (bot_name), else learned from a message that mentions
	// only the bot (see stripOwnMention).
	mentionName string
	learnedName atomic.Pointer[string]

	// Callback mode.
	crypto *wxbiz.Crypto
	window time.Duration

	// Websocket mode.
	url, botID, secret string
	timing             botTiming
	live               atomic.Pointer[botConn] // the subscribed socket, nil when down
}

// New builds a bot from its section (already defaulted and validated by
// the `wecom:` config) and window, the callback timestamp window.
//
// Errors: an unknown mode, or callback settings the crypto refuses (a token
// or EncodingAESKey that is missing or malformed).
func New(s Config, window time.Duration, env channels.Env) (*Bot, error) {
	b := &Bot{
		name:   s.Name,
		mode:   s.Mode,
		corpID: s.CorpID,
		now:    env.Now,
		log:    env.Logger,
		msgs:   env.Messages,
		env:    env,
		window: window,
		url:    s.URL,
		botID:  s.BotID,
		secret: s.Secret,
		timing: defaultBotTiming(),
		// Written as it is mentioned, or without the "@".
		mentionName: strings.TrimPrefix(strings.TrimSpace(s.BotName), "@"),
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if b.window <= 0 {
		b.window = wxbiz.DefaultTimestampWindow
	}
	b.log = b.log.With("channel", wxbiz.ChannelName, "account", s.Name)
	hosts := s.FetchHosts
	if len(hosts) == 0 {
		hosts = DefaultFetchHosts
	}
	addrs, err := channels.ParseAddrRanges(s.FetchAllowAddresses)
	if err != nil {
		return nil, fmt.Errorf("wecom: bot %q: fetch_allow_addresses%w", s.Name, err)
	}
	guard, err := env.FetchGuard(wxbiz.ChannelName, s.Name, channels.FetchPolicy{
		Hosts: hosts, AllowPrivate: s.FetchAllowPrivate, AllowAddrs: addrs,
	}, b.log)
	if err != nil {
		return nil, fmt.Errorf("wecom: bot %q: fetch_hosts%w", s.Name, err)
	}
	b.setFetch(guard)
	switch s.Mode {
	case ModeCallback:
		// An AI bot's callbacks are encrypted with receiveid "".
		c, err := wxbiz.NewCrypto(s.Token, s.EncodingAESKey, "")
		if err != nil {
			return nil, fmt.Errorf("wecom: bot %q: %w", s.Name, err)
		}
		b.crypto = c
	case ModeWebSocket:
		if b.url == "" {
			b.url = DefaultURL
		}
	default:
		return nil, fmt.Errorf("wecom: bot %q: unknown mode %q", s.Name, s.Mode)
	}
	return b, nil
}

// setFetch makes the bot's clients go through guard, with its timeouts.
func (b *Bot) setFetch(guard *channels.FetchGuard) {
	b.fetch = guard
	b.respClient = guard.Client(b.timing.ResponseURL)
	b.mediaClient = guard.Client(0)
}

// Name returns the account name.
func (b *Bot) Name() string { return b.name }

// Limits: the delivery layer cuts replies to what one stream or push
// carries, keeping room for the asker's mention in groups. Both modes
// stream the answer within StreamLifetime: in websocket mode Hermes pushes
// it (a LiveReplier, live.go), in callback mode WeCom polls it
// (refresh).
func (b *Bot) Limits() channels.Limits {
	lim := channels.Limits{
		MaxBytes:     MaxStreamBytes - mentionReserve,
		Format:       channels.FormatMarkdown,
		Dialect:      channels.DialectBasic,
		PerMinute:    BotPushPerMinute,
		Streams:      true,
		LiveDeadline: StreamLifetime,
		// Images go over the long connection (media.go); a
		// response_url takes markdown only.
		Images: b.mode == ModeWebSocket,
	}
	if b.mode == ModeWebSocket {
		lim.LiveInterval = b.timing.Poll
	}
	return lim
}

// Routes are the callback URL of a bot in callback mode: GET for the URL
// verification, POST for messages and stream refreshes.
func (b *Bot) Routes(sink channels.Sink) []channels.Route {
	if b.mode != ModeCallback {
		return nil
	}
	path := "/wecom/bot/" + b.name + "/callback"
	return []channels.Route{
		{Method: http.MethodGet, Path: path, Handler: func(w http.ResponseWriter, r *http.Request) {
			wxbiz.ServeEcho(w, r, b.log, sink, b.name, b.VerifyURL)
		}},
		{Method: http.MethodPost, Path: path, Handler: func(w http.ResponseWriter, r *http.Request) {
			b.serveCallback(w, r, sink)
		}},
	}
}

// Connection is the long connection of a bot in websocket mode. WeCom
// keeps one connection per bot, so it is exclusive.
func (b *Bot) Connection() (channels.Connection, bool) {
	if b.mode != ModeWebSocket {
		return channels.Connection{}, false
	}
	return channels.Connection{Account: b.name, Exclusive: true, Run: b.run, Backoff: b.timing.Backoff}, true
}

// botReplyTo is a bot's Inbound.ReplyTo: everything Send needs to answer
// in the same conversation, on any replica.
type botReplyTo struct {
	Mode        string `json:"mode"`      // ModeCallback | ModeWebSocket
	ChatID      string `json:"chat_id"`   // chatid in groups, the user id in single chats
	ChatType    string `json:"chat_type"` // channels.ChatSingle | channels.ChatGroup
	UserID      string `json:"user_id"`   // the asker, mentioned in group replies
	MsgID       string `json:"msg_id"`    // the message, also its stream id
	ResponseURL string `json:"response_url,omitempty"`
	ReqID       string `json:"req_id,omitempty"` // the inbound frame's req_id (websocket)
	Received    int64  `json:"received"`         // Unix seconds when Hermes received the message
}

func (rt botReplyTo) receivedAt() time.Time { return time.Unix(rt.Received, 0) }

// mention is what starts every reply in a group chat: the asker's mention
// (WeCom markdown renders <@userid> as an @), so that in a busy group the
// asker sees the answer is theirs.
func mention(chatType, userID string) string {
	if chatType != channels.ChatGroup || userID == "" {
		return ""
	}
	return "<@" + userID + ">\n"
}

// errNoSocket: a websocket bot's push needs the live connection, which
// another replica holds or which is reconnecting. Retryable.
var errNoSocket = errors.New("no live connection to WeCom on this replica")

// Send delivers one reply part to the conversation in out.ReplyTo (the
// delivery layer holds back a first part the message's stream may still
// show): a callback-mode bot POSTs markdown to the message's response_url
// and a websocket bot pushes aibot_send_msg over its socket. An image is
// uploaded over the socket (websocket mode only; see sendImage).
//
// Errors wrap channels.ErrPermanent when retrying cannot help: a ReplyTo
// that is not a bot's, an image a callback-mode bot cannot send, content
// over MaxStreamBytes, a response_url expired (ResponseURLLifetime),
// already used or outside fetch_hosts (also wrapping
// channels.ErrFetchRefused: no request was made), and WeCom errcodes that
// are not transient. Without the live socket on this replica
// (websocket), and on network failures, the error is retryable.
func (b *Bot) Send(ctx context.Context, out channels.Outbound) (channels.SendResult, error) {
	var rt botReplyTo
	if err := json.Unmarshal(out.ReplyTo, &rt); err != nil || rt.ChatID == "" {
		return channels.SendResult{}, fmt.Errorf("wecom: bot %q: reply address %s: %w", b.name, out.ReplyTo, channels.ErrPermanent)
	}
	fail := func(err error) (channels.SendResult, error) {
		return channels.SendResult{}, fmt.Errorf("wecom: bot %q: send to %q: %w", b.name, rt.ChatID, err)
	}
	if out.Format == channels.FormatImage {
		if err := b.sendImage(ctx, rt, out); err != nil {
			return fail(err)
		}
		return channels.SendResult{}, nil
	}
	now := b.now()
	content := mention(rt.ChatType, rt.UserID) + out.Text
	if len(content) > MaxStreamBytes {
		return fail(fmt.Errorf("content of %d bytes exceeds WeCom's %d: %w", len(content), MaxStreamBytes, channels.ErrPermanent))
	}
	var err error
	if rt.Mode == ModeWebSocket {
		err = b.pushMarkdown(ctx, rt.ChatID, content)
	} else {
		err = b.postResponseURL(ctx, rt, botReply{MsgType: channels.FormatMarkdown, Markdown: &botText{Content: content}}, now)
	}
	if err != nil {
		return fail(err)
	}
	return channels.SendResult{}, nil
}
