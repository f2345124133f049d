package wecomtest

import (
	"context"
	"sync"

	"github.com/hermes-gw/hermes/channels/chantest"
)

// waitUntil calls cond, with mu held, at once and after every change until
// it holds or ctx ends (then it returns ctx's error).
func waitUntil(ctx context.Context, mu *sync.Mutex, c *chantest.Changes, cond func() bool) error {
	return c.Wait(ctx, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return cond()
	})
}
