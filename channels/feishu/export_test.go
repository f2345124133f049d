package feishu

import "time"

// SetStreamPoll shortens how often the app's streams read progress.
func (a *App) SetStreamPoll(d time.Duration) { a.streamPoll = d }

// SetWSTimings shortens the long connection's timings.
func (a *App) SetWSTimings(ping, pongWait time.Duration, backoff ...time.Duration) {
	a.ws.ping, a.ws.pongWait = ping, pongWait
	if len(backoff) > 0 {
		a.ws.backoff = backoff
	}
}
