package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hermes-gw/hermes/channels/guard"
)

// Chat types shared by all platforms.
const (
	ChatSingle = "single"
	ChatGroup  = "group"
)

// Message types that the gateway understands. Anything else is recorded and
// answered with a polite "not supported yet".
const (
	TypeText  = "text"
	TypeEvent = "event"
)

// Identity is who sent a message. It is taken only from a verified, decrypted
// platform callback, never from message text or model output.
type Identity struct {
	UserID string   `json:"user_id"`        // platform user id, e.g. WeCom UserID "zhangsan"
	Name   string   `json:"name,omitempty"` // display name when the platform gives one
	CorpID string   `json:"corp_id"`        // corp / tenant the user belongs to
	Dept   []string `json:"dept,omitempty"` // department ids when known
}

// Inbound is one verified message from a platform.
type Inbound struct {
	Channel   string // platform name: "wecom", "console"
	Account   string // configured app / bot name, e.g. "app-hr"
	MsgID     string // platform message id, the dedupe key within Channel+Account
	MsgType   string // "text", "image", "event", ...
	ChatID    string // conversation id; for one-to-one chats the user id
	ChatType  string // ChatSingle | ChatGroup
	Sender    Identity
	Text      string // the text the model sees: the bot's own mention already stripped
	Mentioned bool   // the bot was @-mentioned (group chats)
	// Parts are a TypeMedia message's text and attachments in the order
	// the user wrote them (Text is then their text, joined); empty for a
	// text message.
	Parts []Part
	// Quote is the message the user quoted, if any (same chat only).
	Quote *Quote
	// ReplyTo is the channel's own JSON: whatever it needs to answer in the
	// same place (a user and agent id, a response_url, a socket's req_id).
	// The gateway stores it and hands it back in Outbound.ReplyTo unread.
	ReplyTo json.RawMessage
	Raw     json.RawMessage // the decrypted platform payload, for the record
	// Nonce is a single-use proof of the delivery, set by a platform whose
	// signature does not cover the body (DingTalk HTTP: a sign over the
	// timestamp only), so one captured signature cannot carry a second,
	// altered message. Accept claims it for MsgID (see Sink.Accept); it
	// holds nothing secret (a hash of the signature). Empty: no claim (an
	// authenticated long connection, a signature over the whole body). An
	// Inbound with a Nonce and no Sender.UserID (a message the channel will
	// not have answered) only claims its Nonce and is never stored.
	Nonce string
	// NonceExpires is when the platform's check refuses the proof anyway
	// (the signed timestamp leaves its window); the claim is forgotten
	// after it.
	NonceExpires time.Time
	// Click is a tap on a card's button (MsgType TypeClick; cards.go).
	// Accept answers it in Receipt.Card; the message the run sees is built
	// by the gateway from the card, not from this Inbound, and its Raw is
	// not kept.
	Click *Click
}

// Receipt is what Sink.Accept did with a message.
type Receipt struct {
	// New is false when the platform had delivered the same message before:
	// nothing was stored the second time.
	New bool
	// Answer says the message will be answered (now or on its first
	// delivery): a streaming platform opens its stream. False for events,
	// group messages not addressed to the bot and the like.
	Answer bool
	// Card is the answer to a click (Inbound.Click), set after the commit:
	// what the channel tells the clicker within the platform's deadline.
	Card *CardAnswer
}

// MessageRef names one inbound message.
type MessageRef struct {
	Channel, Account, MsgID string
}

// Progress is how far the answer to a message has come.
type Progress struct {
	// Known is false when no such message was stored (or it will not be
	// answered).
	Known bool
	// Text is the answer so far: a draft while the run goes on, the first
	// part of the final reply once Done.
	Text string
	// Done: Text is the first part of the final reply; the rest, if any,
	// goes through the delivery layer.
	Done bool
	// More is true when the final reply has parts after Text.
	More bool
	// Received is when the platform delivered the message (stream deadlines
	// count from it).
	Received time.Time
	// Shown: a stream has already been closed with the first part.
	Shown bool
	// Parts is the final reply's number of parts, once Done.
	Parts int
}

// Sink is the gateway's one door into the durable inbox, given to every
// channel.
type Sink interface {
	// Accept stores in and the job that answers it in one transaction and
	// returns after the COMMIT: only then may the platform be told "200" or
	// the frame be acked. A repeated message stores nothing.
	//
	// An in.Nonce is claimed for in.MsgID in that same transaction, across
	// all replicas, until in.NonceExpires, even when the message itself is
	// not stored (a group message not addressed to the bot, one without a
	// sender): a nonce
	// already claimed by another MsgID is a replay, and nothing is stored;
	// the same MsgID with its own nonce again is a repeat, answered as the
	// first delivery was (and never stored if the first was not).
	//
	// Errors wrap ErrUnavailable: nothing was stored, answer so that the
	// platform retries; or ErrReplayed: nothing was stored, refuse the
	// request (401) and record it as CheckReplay.
	Accept(ctx context.Context, in Inbound) (Receipt, error)
	// Progress reads how far the answer to ref has come, for platforms that
	// poll for it (stream refresh callbacks). A channel that pushes its live
	// reply gets the progress from RunLive instead.
	Progress(ctx context.Context, ref MessageRef) (Progress, error)
	// Shown records that the user has been shown the first part of ref's
	// final reply through a stream the platform polls, so the delivery layer
	// sends only the parts after it.
	Shown(ctx context.Context, ref MessageRef) error
	// Refused records that a callback to account was refused because it
	// failed check (one of the Check* words), so the console can say which
	// check fails. Nothing of the request is passed: never its body or a
	// secret. Best effort: a failure to record is logged, not returned.
	Refused(ctx context.Context, channel, account, check string)
}

// The checks a refused callback failed, for Sink.Refused.
const (
	CheckSignature = "signature" // the signature does not match the token or secret
	CheckTimestamp = "timestamp" // outside the replay window
	CheckDecrypt   = "decrypt"   // the AES key does not decrypt it
	CheckToken     = "token"     // the verification token is not the app's
	CheckMalformed = "malformed" // not the platform's format
	CheckReplay    = "replay"    // a single-use proof (Inbound.Nonce) already used by another message
	CheckCorp      = "corp"      // signed, but names a corp other than the configured one
)

// Reply formats.
const (
	FormatText     = "text"
	FormatMarkdown = "markdown"
	FormatImage    = "image"
)

// Markdown dialects a channel accepts; the delivery layer adapts replies.
const (
	DialectNone     = ""         // plain text: markdown syntax is removed
	DialectBasic    = "basic"    // no tables, no images (WeCom, DingTalk)
	DialectStandard = "standard" // CommonMark with tables
)

// Limits are what one channel's messages must respect. The delivery layer
// splits, formats and paces replies by them.
type Limits struct {
	// MaxBytes is the largest content one Send may carry, in UTF-8 bytes.
	MaxBytes int
	// Format is the format replies are sent in: FormatText or FormatMarkdown.
	Format string
	// Dialect is the markdown the platform renders (with FormatMarkdown).
	Dialect string
	// PerMinute caps sends per minute and chat; 0 means no cap.
	PerMinute int
	// AccountPerMinute caps sends per minute across all chats of the
	// account (the platform's app-wide limit), so a report to hundreds of
	// users is paced rather than refused; 0 means no cap.
	AccountPerMinute int
	// Streams: the platform shows an answer while it grows (the gateway
	// then stores the run's draft as it goes, for Progress).
	Streams bool
	// LiveDeadline: the answer to a message is shown live (with Streams)
	// and must be closed this long after the message arrived, by the
	// platform's rule; 0: no live reply. The delivery layer holds the
	// answer's first part back while the live reply may still show it, at
	// the latest until then. See LiveCloseBy for the margin.
	LiveDeadline time.Duration
	// LiveInterval: the channel pushes its live reply (it is a LiveReplier
	// for this account), and RunLive reads the answer this often, showing
	// what changed; each Live throttles itself further to its platform's
	// rule. 0 with a LiveDeadline: the platform polls (Sink.Progress).
	LiveInterval time.Duration
	// CardAnswers: an answer of one part may go as a card (a Carder's
	// SendCard, with no title) that carries the rating buttons 👍 / 👎;
	// the card shows the text as the answer's own format would.
	CardAnswers bool
	// Images: Send takes FormatImage parts (uploading them through the
	// platform's media API). Without it, a report's chart goes as a text
	// table instead.
	Images bool
}

// Image is a picture to send (scheduled reports' charts).
type Image struct {
	Name string // file name, e.g. "tickets.png"
	PNG  []byte
}

// Outbound is one reply part, already within the channel's Limits.
type Outbound struct {
	Account string
	// ReplyTo is the Inbound's ReplyTo, as the channel wrote it.
	ReplyTo json.RawMessage
	// Format is FormatText, FormatMarkdown or FormatImage.
	Format string
	Text   string
	Image  *Image // with FormatImage
	// MediaID is Image's id on the platform when the delivery layer has
	// uploaded it already (Uploader): Send sends that id instead of
	// uploading again, so every attempt of the part is the same message.
	MediaID string
	// Part and Parts place this part in its reply (0-based; Parts ≥ 1).
	Part, Parts int
	// Answer: this reply answers the message ReplyTo came from (a stream of
	// that message may show its first part). False for later messages to
	// the same conversation: async results, reports.
	Answer bool
	// Key is the part's idempotency key, the same on every attempt.
	Key string
	// Attempt counts earlier delivery attempts of this same part (0 on the
	// first). A platform with server-side duplicate suppression uses it to
	// suppress a copy an earlier, interrupted attempt may have delivered.
	Attempt int
	// FirstAttemptUnix is when the first attempt of this part started.
	FirstAttemptUnix int64
}

// SendResult says what the platform answered.
type SendResult struct {
	MessageID string // platform id of the sent message, when it returns one
}

// Channel sends replies to one platform.
type Channel interface {
	// Name is the platform name used in Inbound.Channel.
	Name() string
	// Limits are the limits of account's messages.
	Limits(account string) Limits
	// Send delivers one part. Errors wrapping ErrPermanent are not retried.
	Send(ctx context.Context, out Outbound) (SendResult, error)
}

// Uploader is a channel whose images go out by a media id they are
// uploaded for first. The delivery layer uploads each image part once,
// keeps the id with the part, and hands it to every attempt in
// Outbound.MediaID: a resend after a lost answer is then the very message
// the first attempt sent, which a platform's duplicate check can drop,
// rather than a fresh upload under a new id.
type Uploader interface {
	// Upload uploads img for account. Errors wrap ErrPermanent when no
	// retry can help (an image the platform refuses, an account that
	// cannot send images); others are worth retrying.
	Upload(ctx context.Context, account string, img *Image) (Media, error)
}

// Media is an uploaded image.
type Media struct {
	ID string // the platform's media id
	// Lifetime is how long the platform keeps ID after the upload; 0: for
	// good. An id past it is uploaded again.
	Lifetime time.Duration
}

// Route is one HTTP endpoint of a channel (a callback URL).
type Route struct {
	Method  string // http.MethodGet, http.MethodPost
	Path    string // exact path, e.g. "/wecom/app-hr/callback"
	Handler http.HandlerFunc
}

// HTTPReceiver is a channel whose messages arrive as HTTP callbacks.
type HTTPReceiver interface {
	Channel
	// Routes are the channel's callback endpoints, handing messages to sink.
	Routes(sink Sink) []Route
}

// Connection is one long-lived connection a channel keeps to its platform.
type Connection struct {
	// Account is the account the connection serves.
	Account string
	// Exclusive: the platform allows one connection per account (WeCom AI
	// bot), so exactly one replica runs it, under a lease, and the account's
	// deliveries run on that replica.
	Exclusive bool
	// Run serves one session: it dials, serves until the connection drops
	// or ctx ends, and returns why, once every frame it was handling is
	// done with. It acks a frame only after sink.Accept returned. Errors
	// wrap ErrTakenOver (the platform gave the account to another client:
	// do not dial again), ErrCredentials, ErrReconnect or guard.ErrPanic, or say
	// how the connection dropped. Reconnect runs it again and again.
	Run func(ctx context.Context, sink Sink) error
	// Backoff paces Reconnect's dials; the zero value is DefaultBackoff.
	Backoff Backoff
}

// StreamReceiver is a channel whose messages arrive over long connections.
type StreamReceiver interface {
	Channel
	Connections() []Connection
}

// Directory is a channel that can look up what its callbacks do not carry
// about a user: the department ids skill access rules may name.
type Directory interface {
	Departments(ctx context.Context, account, userID string) ([]string, error)
}

// ProgressReporter is a channel that can show work in progress (a tool
// being called) before the reply, outside the durable outbox. Report must
// not block.
type ProgressReporter interface {
	Report(ctx context.Context, account string, replyTo json.RawMessage, text string)
}

// TokenCache is a cache of platform access tokens shared by all replicas
// (Postgres), sealed at rest with a key derived from the secret it was
// opened with. It holds strings only; the WeCom package adapts it to the
// interface its SDK takes.
type TokenCache interface {
	// Token returns the live token under key, or calls fetch (once across
	// all replicas) and caches its answer until shortly before ttl.
	Token(ctx context.Context, key string, fetch func(ctx context.Context) (token string, ttl time.Duration, err error)) (string, error)
	// Invalidate drops key's token if it is still stale (the one the
	// platform refused as expired); a fresh one already there stays.
	Invalidate(ctx context.Context, key, stale string) error
}

// Env is what a platform's constructor gets from the gateway.
type Env struct {
	// TokenCache opens the shared token cache sealed under secret (an app
	// secret: each app's tokens are readable only with its own secret).
	TokenCache func(secret string) (TokenCache, error)
	// Now is the clock.
	Now func() time.Time
	// Logger receives operator-facing messages (a missing permission, a
	// trusted-IP list to fix).
	Logger *slog.Logger
	// Messages are the bot-facing sentences a channel answers with itself
	// (the AI bot's welcome), Chinese by default.
	Messages ChannelMessages
	// Panicked counts a panic recovered (guard.Run) in a goroutine serving
	// account's peer: a long connection's reader (the connection is then
	// made again) or a stream it pushes (that stream ends; the delivery
	// layer sends the answer). hermes_connection_panics_total. Never nil
	// once built by the gateway; a channel built elsewhere checks.
	Panicked func(channel, account string)
	// FetchRefused counts a URL from one of account's callbacks or frames
	// that its FetchGuard refused to fetch (a host or address outside the
	// platform's). hermes_fetch_refused_total. May be nil outside the
	// gateway.
	FetchRefused func(channel, account string)
}

// CountPanic calls env.Panicked when err is a recovered panic (guard.ErrPanic)
// and reports whether it was one.
func (env Env) CountPanic(channel, account string, err error) bool {
	if !errors.Is(err, guard.ErrPanic) {
		return false
	}
	if env.Panicked != nil {
		env.Panicked(channel, account)
	}
	return true
}

// ChannelMessages are the sentences a channel says without the agent.
type ChannelMessages struct {
	Welcome  string // answer to a user entering a chat with the bot
	Thinking string // first stream content while the run starts
	Later    string // a stream closed at its deadline; the rest follows
	Title    string // a reply's title where the platform shows one, when its text gives none
}

// Platform is one chat platform, registered once in cmd/hermes.
type Platform struct {
	// Name is the platform's top-level YAML key, e.g. "wecom".
	Name string
	// New decodes the platform's YAML section with decode (unknown keys are
	// errors) and builds the channel. Errors name the full key, e.g.
	// "wecom.apps[0].token: required". ctx lives as long as the gateway
	// (hermes serve: until shutdown): every goroutine the channel starts
	// on its own, outside a call that has a context of its own, ends with
	// it.
	New func(ctx context.Context, decode func(any) error, env Env) (Channel, error)
}

// Section is a platform's YAML section once decoded: it fills its
// defaults, validates itself (errors naming the full key) and builds the
// channel, whose background work ends with ctx (see Platform.New).
type Section interface {
	ApplyDefaults()
	Validate() error
	Build(ctx context.Context, env Env) (Channel, error)
}

// NewPlatform is the Platform named name whose section decodes into a C.
func NewPlatform[C any, P interface {
	*C
	Section
}](name string) Platform {
	return Platform{Name: name, New: func(ctx context.Context, decode func(any) error, env Env) (Channel, error) {
		var cfg C
		if err := decode(&cfg); err != nil {
			return nil, err
		}
		section := P(&cfg)
		section.ApplyDefaults()
		if err := section.Validate(); err != nil {
			return nil, err
		}
		return section.Build(ctx, env)
	}}
}

// Errors shared by all channels; platform errors wrap them, and HTTPStatus
// maps them to the answer a platform gets.
var (
	// ErrPermanent marks a send error that retrying cannot fix (unknown
	// user, message rejected).
	ErrPermanent = errors.New("permanent delivery failure")
	// ErrUnavailable: the message could not be stored (Postgres down); the
	// platform must retry.
	ErrUnavailable = errors.New("temporarily unavailable")
	// ErrUnauthorized: a signature, token or timestamp check failed.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrReplayed: Accept found the message's Nonce already claimed by
	// another message (a captured signature sent again with another body);
	// nothing was stored. It answers 401 like any failed check.
	ErrReplayed = fmt.Errorf("single-use proof already used: %w", ErrUnauthorized)
	// ErrBadRequest: a body or frame that cannot be decoded.
	ErrBadRequest = errors.New("bad request")
	// ErrUnknownAccount: a callback for an account that is not configured.
	ErrUnknownAccount = errors.New("unknown account")
	// ErrTakenOver: the platform gave the account's connection to another
	// client; do not fight it.
	ErrTakenOver = errors.New("connection taken over by another client")
)
