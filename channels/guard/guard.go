// Package guard turns a panic in a goroutine into an error. Every
// goroutine that reads from a network peer (a platform's long connection,
// an MCP server's answers) runs its body under Run: a panic in a goroutine
// cannot be recovered by any other, so each one guards itself.
//
// It is a leaf, importing nothing of Hermes, so that the platform packages,
// channels' reconnect loop, the gateway's live replies and skills' MCP
// connects share the one guard without skills depending on the channels
// package (the channel boundary). It lives under channels because most of
// its users are there.
package guard

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

// Run runs fn and turns a panic in it into an error wrapping ErrPanic,
// with the panic's value and stack; fn's own error is returned as is.
func Run(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrPanic, v, debug.Stack())
		}
	}()
	return fn()
}
