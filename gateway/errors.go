package gateway

import (
	"errors"
	"net/http"

	"github.com/hermes-gw/hermes/channels/wecom"
)

// ErrUnavailable means the gateway could not store a message (Postgres
// down): the platform must be answered 5xx so that it retries.
var ErrUnavailable = errors.New("gateway: temporarily unavailable")

// ErrUnknownAccount is a callback for an app that is not configured.
var ErrUnknownAccount = errors.New("gateway: unknown account")

// ErrBadRequest is a request body we cannot use.
var ErrBadRequest = errors.New("gateway: bad request")

// ErrUnauthorized is an API call without a valid key.
var ErrUnauthorized = errors.New("gateway: unauthorized")

// httpStatus maps an error to the HTTP status of a callback answer. It is
// the only place that does.
func httpStatus(err error) int {
	for _, m := range statusMap {
		if errors.Is(err, m.err) {
			return m.status
		}
	}
	return http.StatusInternalServerError
}

var statusMap = []struct {
	err    error
	status int
}{
	{ErrUnavailable, http.StatusServiceUnavailable},
	{ErrUnknownAccount, http.StatusNotFound},
	{ErrBadRequest, http.StatusBadRequest},
	{ErrUnauthorized, http.StatusUnauthorized},
	{ErrBadToken, http.StatusUnauthorized},
	{ErrGone, http.StatusGone},
	{wecom.ErrSignature, http.StatusUnauthorized},
	{wecom.ErrStale, http.StatusUnauthorized},
	{wecom.ErrDecrypt, http.StatusBadRequest},
	{wecom.ErrMalformed, http.StatusBadRequest},
}
