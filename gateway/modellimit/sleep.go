package modellimit

import (
	"context"
	"time"
)

// sleep waits d or until ctx ends, reporting whether d passed. It is the
// gateway's own (gateway/connections.go), copied when the limiter moved
// out of the gateway package; one shared wait-with-ctx replaces both
// (issue 17: sleep-with-ctx is written several times).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
