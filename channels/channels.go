// Package channels holds the types every chat platform adapter shares: the
// verified inbound message, the outbound reply and the Channel interfaces.
//
// A platform package (channels/wecom, channels/console, ...) turns a platform
// callback into []Inbound after verifying it, and sends Outbound replies. It
// never imports the agent or the store.
package channels

import (
	"context"
	"encoding/json"
	"errors"
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

// ReplyHandle carries whatever a platform needs to answer in the same place:
// the user and agent for a WeCom app, a response_url for an AI bot, a session
// webhook for DingTalk. Fields a platform does not use stay empty.
type ReplyHandle struct {
	ToUser      string `json:"to_user,omitempty"`
	ChatID      string `json:"chat_id,omitempty"`
	ResponseURL string `json:"response_url,omitempty"`
	MessageID   string `json:"message_id,omitempty"`
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
	Text      string
	Mentioned bool
	ReplyTo   ReplyHandle
	Raw       json.RawMessage // the decrypted platform payload, for the record
}

// Outbound is one reply part, already within the platform's size limit.
type Outbound struct {
	Account string
	ReplyTo ReplyHandle
	Text    string
	// Attempt counts earlier delivery attempts of this same part (0 on the first).
	// A platform with server-side duplicate suppression uses it to suppress a
	// copy an earlier, interrupted attempt may already have delivered.
	Attempt int
	// FirstAttemptUnix is when the first attempt of this part started.
	FirstAttemptUnix int64
}

// SendResult says what the platform answered.
type SendResult struct {
	MessageID string // platform id of the sent message, when it returns one
}

// ErrPermanent marks a send error that retrying cannot fix (unknown user,
// message rejected). Wrap it; callers test with errors.Is.
var ErrPermanent = errors.New("permanent delivery failure")

// Directory is a channel that can look up what its callbacks do not carry
// about a user: the department ids skill access rules may name.
type Directory interface {
	Departments(ctx context.Context, account, userID string) ([]string, error)
}

// ProgressReporter is a channel that can show work in progress (a tool
// being called) before the reply. Report must not block.
type ProgressReporter interface {
	Report(ctx context.Context, account string, replyTo ReplyHandle, text string)
}

// Channel sends replies to one platform.
type Channel interface {
	// Name is the platform name used in Inbound.Channel.
	Name() string
	// MaxTextBytes is the largest text one Send may carry.
	MaxTextBytes() int
	// Send delivers one part. Errors wrapping ErrPermanent are not retried.
	Send(ctx context.Context, out Outbound) (SendResult, error)
}
