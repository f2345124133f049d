package wecomtest

import (
	"context"
	"sync"
)

// changes wakes the waiters of a fake whenever it records something. It is
// guarded by the fake's own mutex; the zero value is ready.
type changes struct {
	ch chan struct{}
}

// notify wakes every waiter; call it with the fake's mutex held.
func (c *changes) notify() {
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

// waitUntil calls cond, with mu held, at once and after every change until
// it holds or ctx ends (then it returns ctx's error).
func waitUntil(ctx context.Context, mu *sync.Mutex, c *changes, cond func() bool) error {
	for {
		mu.Lock()
		if cond() {
			mu.Unlock()
			return nil
		}
		if c.ch == nil {
			c.ch = make(chan struct{})
		}
		changed := c.ch
		mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
