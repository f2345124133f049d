package gatewaytest

import (
	"sync"
	"time"
)

// JumpClock is a gateway clock (Deps.Now) that is the real time plus the
// jumps made so far. River schedules snoozes on the real clock, so a jump
// moves every scheduled job earlier by as much: to the code under test,
// that much time passed, and a minute of waiting takes a moment.
type JumpClock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the real time plus the jumps.
func (c *JumpClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Jump moves the clock d ahead.
func (c *JumpClock) Jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
