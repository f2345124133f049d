package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/hermes-gw/hermes/channels"
)

// Streaming card layout (card JSON 2.0): one markdown element whose content
// is replaced with the whole answer so far.
const (
	streamElementID = "answer"
	// cardUpdateGap spaces one card's updates so that no second holds
	// CardUpdatesPerSecond of them, whatever the poll interval.
	cardUpdateGap = time.Second / (CardUpdatesPerSecond - 2)
	// streamCloseTimeout bounds closing a card after its stream ended.
	streamCloseTimeout = 5 * time.Second
	// streamMargin: a stream stops this long (at most a tenth of the
	// deadline) before its deadline.
	streamMargin = 5 * time.Second
)

// startStream shows the answer to in while it grows: a streaming card
// replying to the message, updated from sink.Progress until the final
// reply's first part is in it, then closed and marked shown. It runs
// detached from the request (which has been answered) until the stream
// deadline.
func (a *App) startStream(sink channels.Sink, in channels.Inbound) {
	a.streams.Add(1)
	go func() {
		defer a.streams.Done()
		received := a.now()
		// The stream ends a little before Send stops deferring the part, so
		// the card never shows an answer that is also sent as a message.
		margin := min(streamMargin, a.cfg.StreamDeadline/10)
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.StreamDeadline-margin)
		defer cancel()
		// The stream reads CardKit's answers: a panic there ends this
		// stream only, and the answer goes as a message once the deadline
		// passes (it was not marked shown).
		err := channels.Guard(func() error {
			a.stream(ctx, sink, in, received)
			return nil
		})
		if a.env.CountPanic(ChannelName, a.cfg.Name, err) {
			a.log.Error("feishu: streaming card ended by a panic", "msg_id", in.MsgID, "err", err)
		}
	}()
}

// WaitStreams waits for the app's running streams (tests, shutdown).
func (a *App) WaitStreams() { a.streams.Wait() }

// card is one open streaming card.
type card struct {
	id       string
	seq      int    // last sequence used; each update takes the next
	shown    string // content the card shows
	perCard  *rate.Limiter
	streamOn bool
}

func (a *App) stream(ctx context.Context, sink channels.Sink, in channels.Inbound, received time.Time) {
	ref := channels.MessageRef{Channel: ChannelName, Account: in.Account, MsgID: in.MsgID}
	log := a.log.With("msg_id", in.MsgID)
	c, err := a.openCard(ctx, in.MsgID)
	if err != nil {
		log.Warn("feishu: streaming card unavailable; the answer goes out as a message", "err", err)
		a.streamPlain(ctx, sink, ref, in)
		return
	}
	tick := time.NewTicker(a.streamPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			a.closeCard(c, c.shown+"\n\n"+a.msgs.Later, log)
			log.Info("feishu: stream deadline reached; the answer follows as a message", "after", a.now().Sub(received))
			return
		case <-tick.C:
		}
		p, err := sink.Progress(ctx, ref)
		if err != nil {
			log.Warn("feishu: progress unavailable", "err", err)
			continue
		}
		if !p.Known {
			continue
		}
		if p.Shown {
			a.closeCard(c, c.shown, log)
			return
		}
		text := clip(p.Text, MaxPartBytes)
		if text != "" && text != c.shown {
			if err := a.updateCard(ctx, c, text); err != nil {
				log.Warn("feishu: card update failed", "err", err)
				continue
			}
		}
		if p.Done && c.shown == text {
			if err := a.setStreaming(ctx, c, false); err != nil {
				log.Warn("feishu: cannot end the card's streaming mode", "err", err)
			}
			if err := sink.Shown(ctx, ref); err != nil {
				log.Warn("feishu: stream shown but not recorded; the part may be sent again", "err", err)
			}
			return
		}
	}
}

// openCard creates the card entity and replies with it.
func (a *App) openCard(ctx context.Context, msgID string) (*card, error) {
	data, err := marshalJSON(map[string]any{
		"schema": "2.0",
		"config": map[string]any{
			"streaming_mode": true,
			"summary":        map[string]string{"content": a.msgs.Thinking},
		},
		"body": map[string]any{"elements": []map[string]string{
			{"tag": "markdown", "element_id": streamElementID, "content": a.msgs.Thinking},
		}},
	})
	if err != nil {
		return nil, err
	}
	var out struct {
		Data struct {
			CardID string `json:"card_id"`
		} `json:"data"`
	}
	if err := a.cardCall(ctx, "cardkit/v1/cards", http.MethodPost, "/open-apis/cardkit/v1/cards",
		map[string]string{"type": "card_json", "data": string(data)}, &out); err != nil {
		return nil, err
	}
	if out.Data.CardID == "" {
		return nil, fmt.Errorf("feishu: card created without card_id")
	}
	content, _ := marshalJSON(map[string]any{"type": "card", "data": map[string]string{"card_id": out.Data.CardID}})
	if _, err := a.post(ctx, replyTo{MessageID: msgID}, "interactive", string(content), replyUUID("card:"+msgID)); err != nil {
		return nil, err
	}
	return &card{
		id: out.Data.CardID, shown: a.msgs.Thinking, streamOn: true,
		perCard: rate.NewLimiter(rate.Every(cardUpdateGap), 1),
	}, nil
}

// updateCard replaces the element's content with text under the next
// sequence number.
func (a *App) updateCard(ctx context.Context, c *card, text string) error {
	if err := c.perCard.Wait(ctx); err != nil {
		return err
	}
	c.seq++
	err := a.cardCall(ctx, "cardkit/v1/cards/elements/content", http.MethodPut,
		"/open-apis/cardkit/v1/cards/"+pathEscape(c.id)+"/elements/"+streamElementID+"/content",
		map[string]any{"content": text, "sequence": c.seq}, nil)
	if err == nil {
		c.shown = text
	}
	return err
}

// setStreaming switches the card's streaming mode (off ends the typing
// effect and lets the client show the card as final).
func (a *App) setStreaming(ctx context.Context, c *card, on bool) error {
	if err := c.perCard.Wait(ctx); err != nil {
		return err
	}
	settings, _ := marshalJSON(map[string]any{"config": map[string]any{"streaming_mode": on}})
	c.seq++
	err := a.cardCall(ctx, "cardkit/v1/cards/settings", http.MethodPatch,
		"/open-apis/cardkit/v1/cards/"+pathEscape(c.id)+"/settings",
		map[string]any{"settings": string(settings), "sequence": c.seq}, nil)
	if err == nil {
		c.streamOn = on
	}
	return err
}

// closeCard shows text (if it differs) and ends streaming, on a context of
// its own: the stream's may have ended.
func (a *App) closeCard(c *card, text string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), streamCloseTimeout)
	defer cancel()
	if text != c.shown {
		if err := a.updateCard(ctx, c, clip(text, MaxPartBytes)); err != nil {
			log.Warn("feishu: last card update failed", "err", err)
		}
	}
	if c.streamOn {
		if err := a.setStreaming(ctx, c, false); err != nil {
			log.Warn("feishu: cannot end the card's streaming mode", "err", err)
		}
	}
}

// cardCall is an OpenAPI call within the app's CardKit budget.
func (a *App) cardCall(ctx context.Context, op, method, path string, body, out any) error {
	if err := a.cardRate.Wait(ctx); err != nil {
		return err
	}
	return a.api.call(ctx, op, method, path, nil, body, out)
}

// streamPlain is the fallback when no card can be opened: it waits for the
// final reply's first part and sends it as a message, then marks it shown,
// so the user gets the answer as soon as it is there rather than at the
// stream deadline.
func (a *App) streamPlain(ctx context.Context, sink channels.Sink, ref channels.MessageRef, in channels.Inbound) {
	tick := time.NewTicker(a.streamPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return // Send delivers it after the deadline
		case <-tick.C:
		}
		p, err := sink.Progress(ctx, ref)
		if err != nil || !p.Known || !p.Done {
			continue
		}
		if p.Shown {
			return
		}
		var rt replyTo
		_ = json.Unmarshal(in.ReplyTo, &rt) // written by decodeEvent
		msgType, content := messageContent(channels.FormatMarkdown, p.Text, mentionOf(rt, 0))
		if _, err := a.post(ctx, rt, msgType, content, replyUUID("plain:"+ref.MsgID)); err != nil {
			a.log.Warn("feishu: fallback reply failed; Send retries after the stream deadline", "msg_id", ref.MsgID, "err", err)
			return
		}
		if err := sink.Shown(ctx, ref); err != nil {
			a.log.Warn("feishu: fallback reply sent but not recorded; the part may be sent again", "msg_id", ref.MsgID, "err", err)
		}
		return
	}
}

// clip cuts text to at most n bytes on a rune boundary, marking the cut.
func clip(text string, n int) string {
	if len(text) <= n {
		return text
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}
