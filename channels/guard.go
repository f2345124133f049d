package channels

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrPanic marks the error a recovered panic became: a peer's frame drove
// the code that read it into a state it does not handle. It costs the
// connection the frame came on (which is closed and made again), never the
// process or the other connections.
var ErrPanic = errors.New("panic recovered")

// Guard runs fn and turns a panic in it into an error wrapping ErrPanic,
// with the panic's value and stack. Every goroutine that reads from a
// network peer runs its body under Guard: a panic in a goroutine cannot be
// recovered by any other, so each one guards itself.
func Guard(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrPanic, v, debug.Stack())
		}
	}()
	return fn()
}
