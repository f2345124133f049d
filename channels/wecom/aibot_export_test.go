package wecom

import (
	"testing"
	"time"
)

// SetBotTiming shortens a bot's long-connection intervals for tests:
// heartbeat, ack timeout, progress polling and the reconnect backoff table.
func SetBotTiming(b *Bot, ping, ackTimeout, poll time.Duration, backoff ...time.Duration) {
	b.timing.Ping, b.timing.AckTimeout, b.timing.Poll = ping, ackTimeout, poll
	if len(backoff) > 0 {
		b.timing.Backoff = backoff
	}
}

// SetPanicHook has every bot call hook on each callback frame, on the read
// loop (stage "read") and in the frame's handler ("handle"), until the test
// ends: a hook that panics plays a frame that drives the code into a state
// it does not handle.
func SetPanicHook(t testing.TB, hook func(stage string, body []byte)) {
	panicHook.Store(&hook)
	t.Cleanup(func() { panicHook.Store(nil) })
}
