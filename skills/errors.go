package skills

import (
	"errors"
	"fmt"
	"time"
)

// Errors a call can wrap; callers (the agent's observation shaping, traces,
// the route handler) branch on them with errors.Is. The texts are written to
// read well inside "skill NAME <text> ..." messages shown to the model.
var (
	ErrRefused       = errors.New("refused the request")      // backend answered 4xx, MCP tool error, command exit 64/65/77
	ErrUnavailable   = errors.New("is unavailable")           // 3xx, 5xx, timeout, network, breaker open
	ErrMisconfigured = errors.New("is misconfigured")         // a secret is unset, no base URL, no async registrar or file issuer
	ErrNoCaller      = errors.New("has no caller to act for") // Caller.UserID is empty
	ErrAccessDenied  = errors.New("is not available to this user")
	ErrUnknownSkill  = errors.New("does not exist")
	// ErrCircuitOpen is wrapped together with ErrUnavailable when the skill's
	// circuit breaker refused the call without contacting the backend.
	ErrCircuitOpen = errors.New("circuit breaker is open")
)

// HTTPError is a backend's non-success HTTP answer. It is wrapped together
// with ErrRefused (4xx) or ErrUnavailable (other statuses), so callers can
// both branch on the class and read the status:
//
//	var he *skills.HTTPError
//	if errors.As(err, &he) && he.Status == 404 { ... }
type HTTPError struct {
	Status int    // HTTP status code
	Body   string // start of the body on one line, secrets removed; the status text when empty
	// RetryAfter is the backend's Retry-After (seconds form) on 429 and
	// 503 answers, zero when absent.
	RetryAfter time.Duration
}

func (e *HTTPError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body) }

// errRunEnded marks a failure caused by the caller's context ending (the
// agent run timed out or the gateway shuts down), not by the backend: it
// neither counts against the circuit breaker nor is retried.
var errRunEnded = errors.New("run ended")
