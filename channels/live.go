package channels

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A live reply shows the answer to a message while it grows: a card the
// channel edits, a stream on its socket. One loop drives every platform's
// (RunLive): the gateway runs it (gateway/live.go) on the replica that accepted the
// message, and the channel packages' tests run the very same loop against
// their fake platforms.

// LiveReplier is a channel that pushes live replies itself, for the
// accounts whose Limits have a LiveInterval.
type LiveReplier interface {
	Channel
	// Open starts the live reply to the message out.ReplyTo names (out.Answer
	// is true), showing out.Text (messages.thinking). Errors: the live reply
	// could not start; the answer then goes through Send.
	Open(ctx context.Context, out Outbound) (Live, error)
}

// Live is one open live reply. RunLive calls its methods from one
// goroutine, one at a time; each throttles itself to its platform's rule.
// Texts may be longer than the platform shows: a Live cuts them.
type Live interface {
	// Update shows soFar, the whole answer so far. An error ends the live
	// reply (RunLive then abandons it and the answer goes through Send).
	Update(ctx context.Context, soFar string) error
	// Finish shows final, the final reply's first part, and closes the live
	// reply. Without an error the user has seen it: the delivery layer
	// sends only the parts after it. With one, the answer goes through Send.
	Finish(ctx context.Context, final Outbound) (SendResult, error)
	// Abandon closes the live reply showing text (the answer so far and a
	// note that the answer follows as a message). It is best effort: the
	// answer goes through Send whatever it returns.
	Abandon(ctx context.Context, text string) error
}

// ProgressSource reads how far the answer to the live reply's message has
// come (the gateway reads Postgres, as Sink.Progress does).
type ProgressSource interface {
	Progress(ctx context.Context) (Progress, error)
}

// ProgressFunc is a function that is a ProgressSource.
type ProgressFunc func(ctx context.Context) (Progress, error)

// Progress calls f.
func (f ProgressFunc) Progress(ctx context.Context) (Progress, error) { return f(ctx) }

// Live-reply timing shared by every platform.
const (
	// LiveMargin: a live reply is closed this long before its LiveDeadline
	// (at most a tenth of it), so that the closing call (each platform's
	// bounded at LiveCloseTimeout) lands in time whatever the cadence and
	// the clocks' skew, which WeCom's documentation warns of.
	LiveMargin = 30 * time.Second
	// LiveCloseTimeout bounds abandoning a live reply, on a context of its
	// own: the loop's may have ended.
	LiveCloseTimeout = 5 * time.Second
)

// LiveCloseBy is when a live reply to a message received at received is
// closed at the latest: LiveMargin (at most a tenth of it) before
// LiveDeadline.
func (l Limits) LiveCloseBy(received time.Time) time.Time {
	return received.Add(l.LiveDeadline - min(LiveMargin, l.LiveDeadline/10))
}

var (
	// ErrLiveDeadline: the live reply was closed at its deadline before the
	// answer was there.
	ErrLiveDeadline = errors.New("live reply reached its deadline")
	// errNoLiveTiming: RunLive was given an account without a cadence or a
	// deadline.
	errNoLiveTiming = errors.New("no live-reply interval or deadline")
)

// LiveRun is one live reply for RunLive to drive.
type LiveRun struct {
	// Replier shows it; its Limits(Open.Account) give the cadence
	// (LiveInterval) and the deadline (LiveDeadline).
	Replier LiveReplier
	// Open is the opening state: Account, ReplyTo and Answer of the
	// message, Text the opening words (messages.thinking). Its Format and
	// Key are those of the answer's first part, which Finish gets.
	Open Outbound
	// Progress is read every LiveInterval.
	Progress ProgressSource
	// Received is when the message arrived: the deadline counts from it.
	Received time.Time
	// Later is the note an abandoned live reply closes with
	// (messages.later).
	Later string
	// Now is the deadline's clock (nil: time.Now); the cadence runs on the
	// real one.
	Now func() time.Time
}

// RunLive opens run's live reply, shows the answer as it grows (every
// LiveInterval, when the text changed) and finishes it with the final
// reply's first part. shown reports that Finish showed it: the delivery
// layer then sends only the parts after it. Otherwise the live reply was
// abandoned (closed with what it showed and run.Later) or never opened,
// and err says why: ErrLiveDeadline once LiveCloseBy passes, ctx's error
// when ctx ends, or the failed Open, Update or Finish. Once it returns it
// touches the live reply no more.
func RunLive(ctx context.Context, run LiveRun) (shown bool, err error) {
	now := run.Now
	if now == nil {
		now = time.Now
	}
	lim := run.Replier.Limits(run.Open.Account)
	if lim.LiveInterval <= 0 || lim.LiveDeadline <= 0 {
		return false, fmt.Errorf("channels: %s account %q: %w", run.Replier.Name(), run.Open.Account, errNoLiveTiming)
	}
	closeBy := lim.LiveCloseBy(run.Received)
	live, err := run.Replier.Open(ctx, run.Open)
	if err != nil {
		return false, fmt.Errorf("open: %w", err)
	}
	shows := run.Open.Text // what the live reply shows now
	soFar := ""            // the newest draft read
	var lastRead error     // why the last progress read failed
	abandon := func(text string, cause error) (bool, error) {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LiveCloseTimeout)
		defer cancel()
		if err := live.Abandon(actx, text); err != nil {
			cause = errors.Join(cause, fmt.Errorf("abandon: %w", err))
		}
		return false, cause
	}
	tick := time.NewTicker(lim.LiveInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return abandon(WithNote(soFar, run.Later), ctx.Err())
		case <-tick.C:
		}
		p, err := run.Progress.Progress(ctx)
		switch {
		case err != nil:
			lastRead = err
		case !p.Known:
			return abandon(shows, errors.New("no answer will come for the message"))
		case p.Done && p.Shown:
			// The first part went out another way (its hold lapsed): close
			// what shows, without the note.
			return abandon(shows, errors.New("the answer's first part was delivered meanwhile"))
		case p.Done:
			// Before the deadline check: the answer is there, and the
			// margin leaves room to show it.
			final := run.Open
			final.Text, final.Parts = p.Text, max(p.Parts, 1)
			if _, err := live.Finish(ctx, final); err != nil {
				return abandon(WithNote(soFar, run.Later), fmt.Errorf("finish: %w", err))
			}
			return true, nil
		case p.Text != "":
			soFar = p.Text
		}
		if !now().Before(closeBy) {
			cause := ErrLiveDeadline
			if lastRead != nil {
				cause = fmt.Errorf("%w (last progress read: %w)", ErrLiveDeadline, lastRead)
			}
			return abandon(WithNote(soFar, run.Later), cause)
		}
		if soFar == "" || soFar == shows {
			continue
		}
		if err := live.Update(ctx, soFar); err != nil {
			return abandon(WithNote(soFar, run.Later), fmt.Errorf("update: %w", err))
		}
		shows = soFar
	}
}

// WithNote is text followed by note on a paragraph of its own; either may
// be empty.
func WithNote(text, note string) string {
	switch {
	case text == "":
		return note
	case note == "":
		return text
	}
	return text + "\n\n" + note
}
