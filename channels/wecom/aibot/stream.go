package aibot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// botReply is the JSON body of everything a bot says but a card's update
// (cardUpdate): a passive reply and aibot_respond_msg (stream, or text for
// a welcome), a response_url POST and aibot_send_msg (markdown or a
// template card, the latter with chatid).
type botReply struct {
	ChatID       string        `json:"chatid,omitempty"`
	MsgType      string        `json:"msgtype"`
	Text         *botText      `json:"text,omitempty"`
	Markdown     *botText      `json:"markdown,omitempty"`
	Stream       *botStream    `json:"stream,omitempty"`
	TemplateCard *templateCard `json:"template_card,omitempty"`
}

// botStream is a stream's state as WeCom shows it: Content is the whole
// text so far, not a delta.
type botStream struct {
	ID      string `json:"id"`
	Finish  bool   `json:"finish"`
	Content string `json:"content"`
}

func streamReply(s botStream) botReply { return botReply{MsgType: botTypeStream, Stream: &s} }

func textReply(text string) botReply {
	return botReply{MsgType: channels.TypeText, Text: &botText{Content: text}}
}

// botAnswer is what a bot says right after the sink accepted a message.
type botAnswer int

const (
	answerNothing botAnswer = iota // an empty 200; no frame
	answerWelcome                  // the welcome text (enter_chat)
	answerStream                   // open the message's stream
)

// accept hands a message to the sink and decides how to answer it. Only
// after Accept returned may the platform be answered. An event that names
// no user is acknowledged and not handed to the sink: there is no one to
// record it for or to answer.
//
// Errors wrap wxbiz.ErrMalformed (a message the Inbound cannot be built from) or
// channels.ErrUnavailable (the sink failed: WeCom should try again).
func (b *Bot) accept(ctx context.Context, sink channels.Sink, m *botMessage, plain []byte, reqID string) (channels.Inbound, botAnswer, error) {
	if m.anonymous() {
		b.log.Debug("wecom bot: ignoring an event that names no user", "eventtype", m.Event.EventType, "msg_id", m.MsgID)
		return channels.Inbound{}, answerNothing, nil
	}
	in, err := b.inbound(m, plain, reqID)
	if err != nil {
		return in, answerNothing, err
	}
	rc, err := sink.Accept(ctx, in)
	if err != nil {
		return in, answerNothing, unavailable("accept", err)
	}
	switch {
	case m.eventType() == botEnterChat && b.msgs.Welcome != "":
		return in, answerWelcome, nil
	case rc.Answer && in.MsgType != channels.TypeEvent:
		// Also when the message is a repeat (rc.New false): WeCom repeats a
		// message whose answer it did not get, and the stream id is the
		// msgid, so the stream opens again where it was.
		return in, answerStream, nil
	}
	return in, answerNothing, nil
}

// unavailable marks a sink failure as one the platform should retry.
func unavailable(op string, err error) error {
	if errors.Is(err, channels.ErrUnavailable) {
		return fmt.Errorf("wecom: %s: %w", op, err)
	}
	return fmt.Errorf("wecom: %s: %w: %w", op, channels.ErrUnavailable, err)
}

// openStream is the first state of a message's stream: the "thinking"
// text, unfinished.
func (b *Bot) openStream(in channels.Inbound) botStream {
	return botStream{
		ID:      in.MsgID,
		Content: fitStream(mention(in.ChatType, in.Sender.UserID) + b.msgs.Thinking),
	}
}

// streamStep is the next state of a stream given the run's progress.
type streamStep struct {
	stream botStream
	// shown: the stream finishes with the first part of the final reply;
	// once WeCom has it, the sink must record Shown so the delivery layer
	// sends only the parts after it.
	shown bool
}

// step decides what a stream WeCom polls (callback mode) shows now: the
// draft so far, the final first part (finished), or, at the deadline (the
// live reply's, channels.Limits.LiveCloseBy), the draft with the "rest
// follows" note (finished; the reply then goes through Send). fallback is
// when the message arrived, used when p has no Received.
func (b *Bot) step(id string, p channels.Progress, chatType, userID string, fallback time.Time) streamStep {
	received := p.Received
	if received.IsZero() {
		received = fallback
	}
	var st streamStep
	text := p.Text
	switch {
	case p.Done:
		st.stream.Finish, st.shown = true, !p.Shown
	case !p.Known:
		// Nothing will come for this stream: close it.
		st.stream.Finish = true
	case !b.now().Before(b.Limits().LiveCloseBy(received)):
		st.stream.Finish = true
		text = channels.WithNote(text, b.msgs.Later)
	case text == "":
		text = b.msgs.Thinking
	}
	st.stream.ID = id
	st.stream.Content = fitStream(mention(chatType, userID) + text)
	return st
}
