package chantest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hermes-gw/hermes/channels"
)

// ReplyTo is the address this channel gives its messages.
type ReplyTo struct {
	ChatID string `json:"chat_id"`
	UserID string `json:"user_id"`
}

// Channel records what it is asked to send.
type Channel struct {
	name   string
	limits channels.Limits

	mu   sync.Mutex
	sent []channels.Outbound
	wake chan struct{} // closed and replaced on every send
	// fail, when set, decides the outcome of a send before it is recorded.
	fail func(channels.Outbound) error
	// unreachable are the chats PushAddress refuses.
	unreachable map[string]bool
	// checks are what Check reports.
	checks []channels.Check
}

// New returns a channel named name with the given limits.
func New(name string, limits channels.Limits) *Channel {
	return &Channel{name: name, limits: limits, wake: make(chan struct{})}
}

// FailWith makes Send return fn's error (nil: send) before recording.
func (c *Channel) FailWith(fn func(channels.Outbound) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = fn
}

// Unreachable makes PushAddress refuse chatID, as a platform answers for a
// chat the bot is not in.
func (c *Channel) Unreachable(chatID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unreachable == nil {
		c.unreachable = map[string]bool{}
	}
	c.unreachable[chatID] = true
}

// PushAddress implements channels.Pusher: any chat but the unreachable
// ones. A single chat is addressed to its user.
func (c *Channel) PushAddress(_ context.Context, _, chatType, chatID string) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unreachable[chatID] {
		return nil, fmt.Errorf("chantest: chat %q: %w", chatID, channels.ErrCannotPush)
	}
	rt := ReplyTo{ChatID: chatID}
	if chatType == channels.ChatSingle {
		rt.UserID = chatID
	}
	return json.Marshal(rt)
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return c.name }

// Limits implements channels.Channel.
func (c *Channel) Limits(string) channels.Limits { return c.limits }

// Send records out.
func (c *Channel) Send(_ context.Context, out channels.Outbound) (channels.SendResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		if err := c.fail(out); err != nil {
			return channels.SendResult{}, err
		}
	}
	if out.Text != "" && len(out.Text) > c.limits.MaxBytes {
		return channels.SendResult{}, fmt.Errorf("chantest: %d bytes over the limit %d: %w", len(out.Text), c.limits.MaxBytes, channels.ErrPermanent)
	}
	c.sent = append(c.sent, out)
	close(c.wake)
	c.wake = make(chan struct{})
	return channels.SendResult{MessageID: fmt.Sprint(len(c.sent))}, nil
}

// Sent returns everything sent so far, in order.
func (c *Channel) Sent() []channels.Outbound {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]channels.Outbound(nil), c.sent...)
}

// WaitSent waits until at least n sends were recorded, or ctx ends.
func (c *Channel) WaitSent(ctx context.Context, n int) ([]channels.Outbound, error) {
	// Copied only once enough are there: each send wakes the waiter, and a
	// copy per wake made a wait for 5,000 sends allocate over a gigabyte,
	// which the capacity benchmarks then measured as Hermes's GC work.
	for {
		c.mu.Lock()
		count, wake := len(c.sent), c.wake
		c.mu.Unlock()
		if count >= n {
			return c.Sent(), nil
		}
		select {
		case <-ctx.Done():
			return c.Sent(), fmt.Errorf("chantest: %d of %d sends: %w", count, n, ctx.Err())
		case <-wake:
		}
	}
}

// Message is a text message from user in chat; a group chat when group.
func (c *Channel) Message(account, msgID, chatID, user, text string, group, mentioned bool) channels.Inbound {
	chatType := channels.ChatSingle
	if group {
		chatType = channels.ChatGroup
	}
	rt, _ := json.Marshal(ReplyTo{ChatID: chatID, UserID: user})
	return channels.Inbound{
		Channel: c.name, Account: account, MsgID: msgID, MsgType: channels.TypeText,
		ChatID: chatID, ChatType: chatType, Sender: channels.Identity{UserID: user, CorpID: "corp-test"},
		Text: text, Mentioned: mentioned, ReplyTo: rt,
	}
}

// AddressOf decodes what a send was addressed to.
func AddressOf(out channels.Outbound) ReplyTo {
	var rt ReplyTo
	_ = json.Unmarshal(out.ReplyTo, &rt)
	return rt
}

// SelfTest sends a test text to target (a user id) like Send does and
// reports the outcome as a platform answer: a FailWith error is the raw
// answer of a refused test.
func (c *Channel) SelfTest(ctx context.Context, account, target string) (channels.SelfTestResult, error) {
	rt, _ := json.Marshal(ReplyTo{ChatID: target, UserID: target})
	res, err := c.Send(ctx, channels.Outbound{Account: account, ReplyTo: rt, Format: channels.FormatText,
		Text: "self-test", Parts: 1, Key: "self-test"})
	if err != nil {
		return channels.SelfTestResult{Raw: err.Error(), Explanation: "the test channel refused the message"}, nil
	}
	return channels.SelfTestResult{OK: true, Raw: `{"message_id":"` + res.MessageID + `"}`, Explanation: "sent"}, nil
}

// SetChecks sets what Check reports (for `hermes doctor` tests).
func (c *Channel) SetChecks(checks ...channels.Check) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks = checks
}

// Check implements channels.Doctor with the checks of SetChecks.
func (c *Channel) Check(context.Context) []channels.Check {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]channels.Check(nil), c.checks...)
}
