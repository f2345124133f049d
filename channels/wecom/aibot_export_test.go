package wecom

import "time"

// SetBotTiming shortens a bot's long-connection intervals for tests:
// heartbeat, ack timeout, progress polling and the reconnect backoff table.
func SetBotTiming(b *Bot, ping, ackTimeout, poll time.Duration, backoff ...time.Duration) {
	b.timing.Ping, b.timing.AckTimeout, b.timing.Poll = ping, ackTimeout, poll
	if len(backoff) > 0 {
		b.timing.Backoff = backoff
	}
}
