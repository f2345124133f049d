package channels_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// fakeLive is a LiveReplier recording every call with the (bubble's)
// time it came at.
type fakeLive struct {
	limits  channels.Limits
	openErr error
	// updateErr, when set, fails the n-th Update (1-based).
	updateErr func(n int) error

	mu      sync.Mutex
	calls   []string
	at      []time.Time
	updates int
	closeOK bool // Abandon's context was live
}

func (f *fakeLive) Name() string                  { return "fake" }
func (f *fakeLive) Limits(string) channels.Limits { return f.limits }
func (f *fakeLive) Send(context.Context, channels.Outbound) (channels.SendResult, error) {
	return channels.SendResult{}, errors.New("not used")
}

func (f *fakeLive) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
	f.at = append(f.at, time.Now())
}

func (f *fakeLive) Open(_ context.Context, out channels.Outbound) (channels.Live, error) {
	f.record("open " + out.Text)
	if f.openErr != nil {
		return nil, f.openErr
	}
	return f, nil
}

func (f *fakeLive) Update(_ context.Context, soFar string) error {
	f.record("update " + soFar)
	f.mu.Lock()
	f.updates++
	n := f.updates
	f.mu.Unlock()
	if f.updateErr != nil {
		return f.updateErr(n)
	}
	return nil
}

func (f *fakeLive) Finish(_ context.Context, final channels.Outbound) (channels.SendResult, error) {
	f.record(fmt.Sprintf("finish %s (part %d of %d, key %s)", final.Text, final.Part, final.Parts, final.Key))
	return channels.SendResult{}, nil
}

func (f *fakeLive) Abandon(ctx context.Context, text string) error {
	f.record("abandon " + text)
	f.mu.Lock()
	f.closeOK = ctx.Err() == nil
	f.mu.Unlock()
	return nil
}

func (f *fakeLive) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// script answers the n-th progress read (1-based) from steps, the last
// one repeating.
func script(steps ...channels.Progress) channels.ProgressFunc {
	var mu sync.Mutex
	n := 0
	return func(context.Context) (channels.Progress, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return steps[min(n, len(steps))-1], nil
	}
}

func draft(text string) channels.Progress { return channels.Progress{Known: true, Text: text} }

const interval = time.Second

func liveLimits(deadline time.Duration) channels.Limits {
	return channels.Limits{Streams: true, LiveInterval: interval, LiveDeadline: deadline}
}

func run(f *fakeLive, p channels.ProgressSource) channels.LiveRun {
	return channels.LiveRun{
		Replier: f, Progress: p, Received: time.Now(), Later: "稍后发送",
		Open: channels.Outbound{Account: "a", ReplyTo: []byte(`{}`), Answer: true, Text: "思考中", Key: "inbound:1/0"},
	}
}

func TestRunLive(t *testing.T) {
	t.Run("OKFinishes", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeLive{limits: liveLimits(time.Hour)}
			start := time.Now()
			shown, err := channels.RunLive(context.Background(), run(f, script(
				draft(""), draft("你"), draft("你好"), draft("你好"),
				channels.Progress{Known: true, Text: "你好。", Done: true, More: true, Parts: 2},
			)))
			if !shown || err != nil {
				t.Fatalf("RunLive = %v, %v; want shown", shown, err)
			}
			want := []string{"open 思考中", "update 你", "update 你好", "finish 你好。 (part 0 of 2, key inbound:1/0)"}
			if got := f.log(); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("calls %q, want %q", got, want)
			}
			// At the cadence: one read per interval, no update for an
			// unchanged text.
			for i, wantAt := range []time.Duration{0, 2 * interval, 3 * interval, 5 * interval} {
				if got := f.at[i].Sub(start); got != wantAt {
					t.Errorf("%s at %s, want %s", f.calls[i], got, wantAt)
				}
			}
		})
	})

	t.Run("DeadlineAbandons", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const deadline = 6 * time.Minute
			f := &fakeLive{limits: liveLimits(deadline)}
			start := time.Now()
			shown, err := channels.RunLive(context.Background(), run(f, script(draft("写到一半"))))
			if shown || !errors.Is(err, channels.ErrLiveDeadline) {
				t.Fatalf("RunLive = %v, %v; want ErrLiveDeadline", shown, err)
			}
			got := f.log()
			if last := got[len(got)-1]; last != "abandon 写到一半\n\n稍后发送" || len(got) != 3 {
				t.Fatalf("calls %q, want open, one update, abandon with the note", got)
			}
			// channels.LiveMargin before the deadline, within one interval.
			closed, want := f.at[len(f.at)-1].Sub(start), deadline-channels.LiveMargin
			if closed < want || closed >= want+interval {
				t.Fatalf("abandoned after %s, want within %s of %s", closed, interval, want)
			}
		})
	})

	t.Run("DeadlineOnTheInjectedClock", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeLive{limits: liveLimits(time.Hour)}
			r := run(f, script(draft("一"), draft("二"), draft("三")))
			reads := 0
			r.Now = func() time.Time {
				if reads++; reads >= 3 {
					return r.Received.Add(time.Hour) // the clock jumps past the deadline
				}
				return r.Received
			}
			shown, err := channels.RunLive(context.Background(), r)
			if shown || !errors.Is(err, channels.ErrLiveDeadline) {
				t.Fatalf("RunLive = %v, %v; want ErrLiveDeadline", shown, err)
			}
			// The third read's draft is in the closing text.
			if got := f.log(); strings.Join(got, "|") != "open 思考中|update 一|update 二|abandon 三\n\n稍后发送" {
				t.Fatalf("calls %q", got)
			}
		})
	})

	t.Run("DoneBeatsTheDeadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeLive{limits: liveLimits(time.Hour)}
			r := run(f, script(channels.Progress{Known: true, Text: "答案", Done: true, Parts: 1}))
			r.Now = func() time.Time { return r.Received.Add(time.Hour) }
			if shown, err := channels.RunLive(context.Background(), r); !shown || err != nil {
				t.Fatalf("RunLive = %v, %v; want the answer shown", shown, err)
			}
		})
	})

	t.Run("ErrOpen", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			refused := errors.New("card refused")
			f := &fakeLive{limits: liveLimits(time.Hour), openErr: refused}
			reads := 0
			shown, err := channels.RunLive(context.Background(), run(f, channels.ProgressFunc(func(context.Context) (channels.Progress, error) {
				reads++
				return draft("x"), nil
			})))
			if shown || !errors.Is(err, refused) || reads != 0 {
				t.Fatalf("RunLive = %v, %v after %d reads; want the open error, no read", shown, err, reads)
			}
			if got := f.log(); len(got) != 1 {
				t.Fatalf("calls %q, want the open only", got)
			}
		})
	})

	t.Run("ErrUpdateAbandons", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			gone := errors.New("socket closed")
			f := &fakeLive{limits: liveLimits(time.Hour), updateErr: func(n int) error {
				if n == 2 {
					return gone
				}
				return nil
			}}
			shown, err := channels.RunLive(context.Background(), run(f, script(draft("一"), draft("一二"))))
			if shown || !errors.Is(err, gone) {
				t.Fatalf("RunLive = %v, %v; want the update error", shown, err)
			}
			if got := f.log(); strings.Join(got, "|") != "open 思考中|update 一|update 一二|abandon 一二\n\n稍后发送" {
				t.Fatalf("calls %q", got)
			}
		})
	})

	t.Run("ContextEndAbandons", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeLive{limits: liveLimits(time.Hour)}
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(3*interval+interval/2, cancel)
			shown, err := channels.RunLive(ctx, run(f, script(draft("草稿"))))
			if shown || !errors.Is(err, context.Canceled) {
				t.Fatalf("RunLive = %v, %v; want context.Canceled", shown, err)
			}
			if got := f.log(); got[len(got)-1] != "abandon 草稿\n\n稍后发送" || !f.closeOK {
				t.Fatalf("calls %q (close on a live context: %v), want an abandon with the note", got, f.closeOK)
			}
		})
	})

	t.Run("ProgressErrorsRetried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeLive{limits: liveLimits(time.Hour)}
			n := 0
			shown, err := channels.RunLive(context.Background(), run(f, channels.ProgressFunc(func(context.Context) (channels.Progress, error) {
				if n++; n < 3 {
					return channels.Progress{}, errors.New("postgres down")
				}
				return channels.Progress{Known: true, Text: "好", Done: true, Parts: 1}, nil
			})))
			if !shown || err != nil || n != 3 {
				t.Fatalf("RunLive = %v, %v after %d reads; want the answer shown on the third", shown, err, n)
			}
		})
	})

	t.Run("DeliveredMeanwhileClosesWithoutNote", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeLive{limits: liveLimits(time.Hour)}
			shown, err := channels.RunLive(context.Background(), run(f, script(
				draft("一"), channels.Progress{Known: true, Text: "答案", Done: true, Shown: true, Parts: 1})))
			if shown || err == nil {
				t.Fatalf("RunLive = %v, %v; want not shown, with why", shown, err)
			}
			if got := f.log(); strings.Join(got, "|") != "open 思考中|update 一|abandon 一" {
				t.Fatalf("calls %q: no Finish, closed as it shows", got)
			}
		})
	})

	t.Run("ErrNoTiming", func(t *testing.T) {
		f := &fakeLive{limits: channels.Limits{LiveDeadline: time.Minute}}
		if _, err := channels.RunLive(context.Background(), run(f, script(draft("")))); err == nil || len(f.log()) != 0 {
			t.Fatalf("RunLive = %v with calls %q; want an error and no open", err, f.log())
		}
	})
}

func TestLiveCloseBy(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct{ deadline, want time.Duration }{
		{6 * time.Minute, 6*time.Minute - channels.LiveMargin}, // WeCom: 30 s before its 6 minutes
		{100 * time.Millisecond, 90 * time.Millisecond},        // a tenth of a short deadline
	} {
		if got := (channels.Limits{LiveDeadline: c.deadline}).LiveCloseBy(t0).Sub(t0); got != c.want {
			t.Errorf("LiveCloseBy(%s) = +%s, want +%s", c.deadline, got, c.want)
		}
	}
}

func TestWithNote(t *testing.T) {
	for _, c := range [][3]string{{"a", "n", "a\n\nn"}, {"", "n", "n"}, {"a", "", "a"}, {"", "", ""}} {
		if got := channels.WithNote(c[0], c[1]); got != c[2] {
			t.Errorf("WithNote(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}
