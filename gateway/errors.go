package gateway

import (
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

// The gateway's own API errors wrap the shared channels errors, so that
// channels.HTTPStatus, the one status table, answers them too.
var (
	// ErrUnavailable means the gateway could not store a message (Postgres
	// down): the caller must be answered 5xx so that it retries.
	ErrUnavailable = channels.ErrUnavailable
	// ErrUnknownAccount is a request for something not configured.
	ErrUnknownAccount = channels.ErrUnknownAccount
	// ErrBadRequest is a request body we cannot use.
	ErrBadRequest = channels.ErrBadRequest
	// ErrUnauthorized is an API call without a valid key.
	ErrUnauthorized = channels.ErrUnauthorized
	// ErrBadToken is an async callback whose token is malformed or not ours.
	ErrBadToken = fmt.Errorf("gateway: invalid callback token: %w", channels.ErrUnauthorized)
	// ErrGone is a callback for a task already completed or timed out.
	ErrGone = fmt.Errorf("gateway: callback already used or expired: %w", channels.ErrGone)
)
