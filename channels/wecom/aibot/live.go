package aibot

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

// The live reply of a websocket-mode bot: the message's stream, pushed
// with aibot_respond_msg on the inbound frame's req_id (the stream id is
// the msgid), each frame the whole text so far, one at a time, each
// waiting for WeCom's ack (botConn.request). The gateway drives it
// (channels.RunLive) on the replica holding the bot's socket: the frames
// arrive only there.

// Open opens the stream of the message out.ReplyTo names, showing
// out.Text, on a websocket-mode bot's live socket.
//
// Errors: the bot is no websocket bot or ReplyTo no frame of it
// (wrapping channels.ErrPermanent), no live socket on this replica
// (errNoSocket), or WeCom refused the frame (an unknown or expired req_id,
// too many streams of the user).
func (b *Bot) Open(ctx context.Context, out channels.Outbound) (channels.Live, error) {
	if b.mode != ModeWebSocket {
		return nil, fmt.Errorf("wecom: account %q has no live replies: %w", out.Account, channels.ErrPermanent)
	}
	var rt botReplyTo
	if err := json.Unmarshal(out.ReplyTo, &rt); err != nil || rt.ReqID == "" || rt.MsgID == "" {
		return nil, fmt.Errorf("wecom: bot %q: reply address %s names no frame: %w", b.name, out.ReplyTo, channels.ErrPermanent)
	}
	conn := b.live.Load()
	if conn == nil {
		return nil, fmt.Errorf("wecom: bot %q: stream of %q: %w", b.name, rt.MsgID, errNoSocket)
	}
	l := &botLive{b: b, conn: conn, reqID: rt.ReqID, id: rt.MsgID, mention: mention(rt.ChatType, rt.UserID)}
	if err := l.respond(ctx, out.Text, false); err != nil {
		return nil, err
	}
	return l, nil
}

// botLive is one open stream.
type botLive struct {
	b       *Bot
	conn    *botConn // the socket the stream lives on: its req_id is this socket's
	reqID   string
	id      string // the stream id: the msgid
	mention string // the asker's mention in groups, before every content
}

// Update shows soFar in the stream.
func (l *botLive) Update(ctx context.Context, soFar string) error {
	return l.respond(ctx, soFar, false)
}

// Finish finishes the stream with the final reply's first part.
func (l *botLive) Finish(ctx context.Context, final channels.Outbound) (channels.SendResult, error) {
	return channels.SendResult{}, l.respond(ctx, final.Text, true)
}

// Abandon finishes the stream with text (the draft and the note that the
// rest follows).
func (l *botLive) Abandon(ctx context.Context, text string) error {
	return l.respond(ctx, text, true)
}

// respond sends one stream frame and waits for its ack. Errors: the socket
// closed (a new socket knows nothing of this req_id), no ack in time, or
// WeCom's errcode.
func (l *botLive) respond(ctx context.Context, text string, finish bool) error {
	s := botStream{ID: l.id, Finish: finish, Content: fitStream(l.mention + text)}
	ack, err := l.conn.request(ctx, botCmdRespond, l.reqID, streamReply(s))
	if err == nil {
		err = ack.result().err(botCmdRespond)
	}
	if err != nil {
		return fmt.Errorf("wecom: bot %q: stream of %q: %w", l.b.name, l.id, err)
	}
	return nil
}
