package gateway

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
)

// draftWriter keeps the answer so far of one run and stores it every
// worker.draft_interval, for platforms that show an answer while it grows
// (they read it through Sink.Progress, on any replica). The agent's
// progress callback must not block, so it only updates memory.
type draftWriter struct {
	msgs    *config.Messages
	mu      sync.Mutex
	text    strings.Builder // model text of the current step
	status  string          // what runs now, when no text has come yet
	before  string          // status before the run queued for the model
	changed bool
}

// queue shows messages.queued while the run waits for its turn at the
// model, and what showed before once its turn came.
func (d *draftWriter) queue(waiting bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case waiting:
		d.before, d.status = d.status, d.msgs.Queued
	case d.status == d.msgs.Queued:
		d.status = d.before
		if d.status == "" {
			d.status = d.msgs.Thinking
		}
	default:
		return
	}
	d.changed = true
}

// event takes one agent progress event.
func (d *draftWriter) event(e agent.Event) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch e.Kind {
	case agent.EventModelDelta:
		d.text.WriteString(e.Text)
	case agent.EventToolStart:
		// A tool call ends the model's text of that step; what follows is a
		// new answer.
		d.text.Reset()
		d.status = fmt.Sprintf(d.msgs.Working, cmp.Or(e.ToolDisplay, e.Tool))
	default:
		return
	}
	d.changed = true
}

// take returns the draft if it changed since the last take.
func (d *draftWriter) take() (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.changed {
		return "", false
	}
	d.changed = false
	if d.text.Len() > 0 {
		return d.text.String(), true
	}
	return d.status, true
}

// startDrafts stores row's draft while the run goes on, when its channel
// streams; it returns the draft to feed (nil when there is nothing to
// show) and a stop function.
func (rn *runner) startDrafts(ctx context.Context, ch channels.Channel, row store.InboundRow) (*draftWriter, func()) {
	if !ch.Limits(row.In.Account).Streams {
		return nil, func() {}
	}
	d := &draftWriter{msgs: &rn.cfg.Messages}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sleep(ctx, rn.cfg.Worker.DraftInterval) {
			text, ok := d.take()
			if !ok || text == "" {
				continue
			}
			if err := store.SaveDraft(ctx, rn.pool, row.ID, text, rn.now()); err != nil && ctx.Err() == nil {
				rn.log.Warn("draft not stored", "inbound_id", row.ID, "err", err)
			}
		}
	}()
	return d, func() { cancel(); <-done }
}

// startProcessingHint sends messages.processing once if the run is still
// going after worker.processing_hint_after, on channels that show nothing
// while a run goes on. The hint is best effort and not in the outbox: it
// is worth nothing once the answer is there. stop waits for a hint in
// flight, so the answer never overtakes it.
func (rn *runner) startProcessingHint(ctx context.Context, ch channels.Channel, row store.InboundRow) (stop func()) {
	if ch.Limits(row.In.Account).Streams || rn.jobs.isExclusive(row.In.Channel, row.In.Account) {
		return func() {}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	t := time.AfterFunc(rn.cfg.Worker.ProcessingHintAfter, func() {
		defer wg.Done()
		_, err := ch.Send(ctx, channels.Outbound{
			Account: row.In.Account, ReplyTo: row.In.ReplyTo, Format: channels.FormatText,
			Text: rn.cfg.Messages.Processing, Parts: 1, Key: fmt.Sprintf("hint:%d", row.ID),
		})
		if err != nil {
			rn.log.Warn("processing hint not sent", "inbound_id", row.ID, "err", err)
		}
	})
	return func() {
		if t.Stop() {
			wg.Done()
		}
		wg.Wait()
	}
}
