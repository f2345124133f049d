package channels_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
)

var errDropped = errors.New("socket dropped")

// session is one scripted Connection.Run: it lasts, then ends with err (or
// panics with a non-nil boom).
type session struct {
	lasts time.Duration
	err   error
	boom  any
}

// sessions is a connection whose sessions follow a script; it records when
// each began. Past the script, a session lasts until ctx ends.
type sessions struct {
	mu       sync.Mutex
	sessions []session
	began    []time.Time
}

func (s *sessions) run(ctx context.Context, _ channels.Sink) error {
	s.mu.Lock()
	n := len(s.began)
	s.began = append(s.began, time.Now())
	s.mu.Unlock()
	if n >= len(s.sessions) {
		<-ctx.Done()
		return ctx.Err()
	}
	se := s.sessions[n]
	time.Sleep(se.lasts)
	if se.boom != nil {
		panic(se.boom)
	}
	return se.err
}

// gaps are the waits between one session's end and the next's start.
func (s *sessions) gaps() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(s.began) && i <= len(s.sessions); i++ {
		out = append(out, s.began[i].Sub(s.began[i-1])-s.sessions[i-1].lasts)
	}
	return out
}

// reconnect runs the loop over sc until every scripted session has run,
// then stops it, and returns the loop's result and what it logged.
func reconnect(t *testing.T, sc *sessions, backoff channels.Backoff, w channels.Watch) (error, string) {
	t.Helper()
	logs := &chantest.LogBuffer{}
	w.Log = slog.New(slog.NewTextHandler(logs, nil))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	conn := channels.Connection{Account: "bot", Run: sc.run, Backoff: backoff}
	go func() { done <- channels.Reconnect(ctx, conn, nil, w) }()
	for {
		synctest.Wait()
		select {
		case err := <-done:
			return err, logs.String()
		default:
		}
		sc.mu.Lock()
		finished := len(sc.began) > len(sc.sessions)
		sc.mu.Unlock()
		if finished {
			cancel()
			return <-done, logs.String()
		}
		time.Sleep(time.Second)
	}
}

// within checks each gap against its step: at least the step, at most a
// quarter more (DefaultBackoff's jitter).
func within(t *testing.T, gaps, steps []time.Duration) {
	t.Helper()
	if len(gaps) != len(steps) {
		t.Fatalf("%d gaps %v, want %d", len(gaps), gaps, len(steps))
	}
	for i, g := range gaps {
		if g < steps[i] || g > steps[i]+steps[i]/4 {
			t.Errorf("wait %d = %s, want %s to %s", i+1, g, steps[i], steps[i]+steps[i]/4)
		}
	}
}

// Failures in a row walk the table up to 30 s with jitter; a session that
// lived long enough starts it again; one line is logged per failure.
func TestReconnectBacksOffAndResets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var fails []session
		for range 7 {
			fails = append(fails, session{err: errDropped})
		}
		sc := &sessions{sessions: append(fails,
			session{lasts: 2 * time.Minute, err: errDropped}, // a working connection, then lost
			session{err: errDropped})}
		var ups []bool
		err, logs := reconnect(t, sc, channels.Backoff{}, channels.Watch{Up: func(up bool) { ups = append(ups, up) }})
		if err != nil {
			t.Fatalf("Reconnect = %v after ctx ended, want nil", err)
		}
		s := time.Second
		within(t, sc.gaps(), []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, s, 2 * s})
		if n := strings.Count(logs, "long connection lost"); n != 9 {
			t.Errorf("%d failures logged, want 9:\n%s", n, logs)
		}
		if len(ups) != 2*9+1 || !ups[0] || ups[1] || !ups[len(ups)-1] {
			t.Errorf("Up calls %v, want up, down per session and up at the end", ups)
		}
	})
}

// Refused credentials: the next dial waits Refused, not the first step.
func TestReconnectStandsBackOnRefusedCredentials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := fmt.Errorf("wecom: subscription refused: %w", channels.ErrCredentials)
		sc := &sessions{sessions: []session{{err: refused}, {err: refused}, {err: errDropped}}}
		_, logs := reconnect(t, sc, channels.Backoff{}, channels.Watch{})
		within(t, sc.gaps(), []time.Duration{5 * time.Minute, 5 * time.Minute, 4 * time.Second})
		if n := strings.Count(logs, "fix them in the configuration"); n != 2 {
			t.Errorf("refusals logged %d times, want 2:\n%s", n, logs)
		}
	})
}

// A takeover ends the loop with the session's error: no dial against the
// client that took the account.
func TestReconnectEndsOnTakeover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &sessions{sessions: []session{{err: errDropped}, {err: fmt.Errorf("bot: %w", channels.ErrTakenOver)}}}
		err, _ := reconnect(t, sc, channels.Backoff{}, channels.Watch{})
		if !errors.Is(err, channels.ErrTakenOver) {
			t.Fatalf("Reconnect = %v, want ErrTakenOver", err)
		}
		if n := len(sc.gaps()); n != 1 {
			t.Fatalf("%d dials after the first, want 1 (none after the takeover)", n)
		}
	})
}

// The platform moving a working connection is dialled again at once; the
// same request right after a dial is a failure like any other.
func TestReconnectAtOnceWhenAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		moved := fmt.Errorf("dingtalk: disconnect: %w", channels.ErrReconnect)
		sc := &sessions{sessions: []session{{lasts: time.Hour, err: moved}, {err: moved}, {err: moved}}}
		reconnect(t, sc, channels.Backoff{}, channels.Watch{})
		within(t, sc.gaps(), []time.Duration{0, time.Second, 2 * time.Second})
	})
}

// A panic in a session costs that session: counted once, logged once,
// and the loop dials again with its backoff.
func TestReconnectRecoversAPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &sessions{sessions: []session{{boom: "hostile frame"}}}
		panics := 0
		_, logs := reconnect(t, sc, channels.Backoff{}, channels.Watch{Panicked: func() { panics++ }})
		if panics != 1 || strings.Count(logs, "recovered a panic") != 1 || !strings.Contains(logs, "hostile frame") {
			t.Fatalf("%d panics counted; logs:\n%s", panics, logs)
		}
		within(t, sc.gaps(), []time.Duration{time.Second})
	})
}

// The loop stops at once when ctx ends during a wait.
func TestReconnectStopsDuringTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		fail := func(context.Context, channels.Sink) error { return errDropped }
		done := make(chan error, 1)
		go func() {
			done <- channels.Reconnect(ctx, channels.Connection{Run: fail}, nil, channels.Watch{Log: slog.New(slog.DiscardHandler)})
		}()
		time.Sleep(10 * time.Second) // inside the fourth wait (1+2+4, then 8)
		start := time.Now()
		cancel()
		if err := <-done; err != nil || time.Since(start) != 0 {
			t.Fatalf("Reconnect = %v after %s, want nil at once", err, time.Since(start))
		}
	})
}
