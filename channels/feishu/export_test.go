package feishu

import (
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// SetStreamPoll shortens how often the app's streams read progress.
func (a *App) SetStreamPoll(d time.Duration) { a.streamPoll = d }

// SetWSTimings shortens the long connection's timings.
func (a *App) SetWSTimings(ping, pongWait time.Duration, backoff ...time.Duration) {
	a.ws.ping, a.ws.pongWait = ping, pongWait
	if len(backoff) > 0 {
		// Any session of a test is short: none counts as stable.
		a.ws.backoff = channels.Backoff{Steps: backoff, Stable: time.Hour}
	}
}

// SetFrameHook calls hook with every frame a long connection reads, in the
// reader (stage "read") and in the handler of a complete event ("handle"),
// until the test ends. It affects every app: a hook acts only on frames the
// test made for it.
func SetFrameHook(t testing.TB, hook func(stage string, f Frame)) {
	frameHook.Store(&hook)
	t.Cleanup(func() { frameHook.Store(nil) })
}

// The long connection's bounds, for tests that go past them.
const (
	MaxFragments    = maxFragments
	MaxPayloadBytes = maxPayloadBytes
	MaxPartials     = maxPartials
	MaxHeaders      = maxHeaders
)
