package channels

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/hermes-gw/hermes/channels/guard"
)

// Why a long connection's session ended, for Reconnect. Connection.Run
// returns errors wrapping these (or ErrTakenOver, guard.ErrPanic, or anything
// else for a connection that dropped).
var (
	// ErrCredentials: the platform refused the account's credentials (a
	// wrong secret): only the operator can fix that, so the account waits
	// Backoff.Refused before it tries again.
	ErrCredentials = errors.New("the platform refused the credentials")
	// ErrReconnect: the platform asked the client to reconnect (it moves
	// the connection elsewhere): after a stable session, dial again at
	// once.
	ErrReconnect = errors.New("the platform asked to reconnect")
)

// Backoff is how long a long connection waits before it dials again, as
// data: the n-th failure in a row waits Steps[n] (the last one once past
// the end), plus up to Jitter of it at random so that replicas do not
// reconnect in step.
type Backoff struct {
	Steps  []time.Duration
	Jitter float64 // fraction of the step, e.g. 0.25
	// Stable is how long a session must have lasted to count as a working
	// connection: the failures start counting from zero again. A socket
	// that the platform drops right after the handshake keeps backing off.
	Stable time.Duration
	// Refused is the least wait after ErrCredentials.
	Refused time.Duration
}

// orDefault is b, or DefaultBackoff for the zero Backoff (no Steps).
func (b Backoff) orDefault() Backoff {
	if len(b.Steps) == 0 {
		return DefaultBackoff
	}
	return b
}

// DefaultBackoff: 1 s → 2 s → … → 30 s as the platforms' SDKs reconnect
// (protocols.md: the WeCom AI bot's), a quarter of jitter, and 5 minutes
// after refused credentials: the configuration must change first, and a
// platform hammered with a wrong secret may block the app.
var DefaultBackoff = Backoff{
	Steps:   []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second},
	Jitter:  0.25,
	Stable:  time.Minute,
	Refused: 5 * time.Minute,
}

// delay is the wait after the failures-th failure in a row (from 0) that
// ended with err; u in [0, 1) draws the jitter.
func (b Backoff) delay(failures int, err error, u float64) time.Duration {
	d := b.Steps[min(failures, len(b.Steps)-1)]
	if errors.Is(err, ErrCredentials) {
		d = max(d, b.Refused)
	}
	return d + time.Duration(u*b.Jitter*float64(d))
}

// Watch is what Reconnect tells its caller about a connection.
type Watch struct {
	// Log gets one record per session that failed, with the wait before
	// the next; default slog.Default().
	Log *slog.Logger
	// Panicked counts a session that ended in a recovered panic (guard.ErrPanic).
	Panicked func()
	// Up is called with true as a session starts and with false as the
	// loop starts waiting after one.
	Up func(up bool)
}

// Reconnect keeps c up: it runs c.Run, one session after another, waiting
// between them as c.Backoff says (DefaultBackoff when zero), until ctx
// ends (it returns nil) or the platform hands the account to another
// client (it returns Run's error, which wraps ErrTakenOver, without
// dialling again). A panic in a session costs that session only. It is the
// one reconnect loop of Hermes: the gateway runs every long connection
// through it.
func Reconnect(ctx context.Context, c Connection, sink Sink, w Watch) error {
	log := w.Log
	if log == nil {
		log = slog.Default()
	}
	up := w.Up
	if up == nil {
		up = func(bool) {}
	}
	backoff := c.Backoff.orDefault()
	failures := 0
	for {
		up(true)
		began := time.Now()
		err := guard.Run(func() error { return c.Run(ctx, sink) })
		lasted := time.Since(began)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrTakenOver) {
			return err
		}
		up(false)
		stable := lasted >= backoff.Stable
		if stable {
			failures = 0 // a working connection: from the first step again
		}
		var wait time.Duration
		if !stable || !errors.Is(err, ErrReconnect) { // a working connection the platform moves: at once
			wait = backoff.delay(failures, err, rand.Float64())
			failures++
		}
		switch {
		case errors.Is(err, guard.ErrPanic):
			if w.Panicked != nil {
				w.Panicked()
			}
			log.Error("long connection: recovered a panic; reconnecting", "account", c.Account, "in", wait, "err", err)
		case errors.Is(err, ErrCredentials):
			log.Error("long connection refused: the platform does not accept the credentials; fix them in the configuration",
				"account", c.Account, "in", wait, "err", err)
		default:
			log.Warn("long connection lost; reconnecting", "account", c.Account, "in", wait, "err", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}
