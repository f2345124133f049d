package chantest

import (
	"context"
	"sync"
)

// Changes wakes the waiters on a fake's state (a sink, a fake platform)
// at every change of it: Wait returns once its condition holds, checked
// again after each Broadcast. The zero value is ready to use.
type Changes struct {
	mu   sync.Mutex
	wake chan struct{} // closed by the next Broadcast
}

// Broadcast wakes every Wait to check its condition again; call it after
// each change (holding the fake's own lock or not).
func (c *Changes) Broadcast() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
}

// Wait waits until cond holds, or returns ctx's error. cond reads the
// fake's state under the fake's lock; it is checked after the wake-up
// channel is taken, so a change between the check and the wait is not
// missed.
func (c *Changes) Wait(ctx context.Context, cond func() bool) error {
	for {
		c.mu.Lock()
		if c.wake == nil {
			c.wake = make(chan struct{})
		}
		wake := c.wake
		c.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		}
	}
}
