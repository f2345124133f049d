// Package demobackend is a small HR/IT backend for `hermes demo` and tests.
// It answers the sample skills (skills/samples) with canned Chinese data for
// the users zhangsan, lisi and wangwu, and shows how a real backend should
// treat Hermes: verify the signed identity headers, answer only about the
// signed user, and never take a user id from the request body.
package demobackend

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// maxBodyBytes bounds a request body; the sample skills send a few fields.
const maxBodyBytes = 64 << 10

// Call is one request the backend accepted, with the identity it verified.
type Call struct {
	Path      string
	Identity  skills.SignedIdentity // from the signed headers, never from the body
	UserName  string                // X-Hermes-User-Name, decoded (unsigned)
	RequestID string                // X-Request-ID
	Body      string                // as received, to show body fields did not decide the user
	Status    int                   // HTTP status answered
}

// Backend is an http.Handler for the sample skills' endpoints:
// POST /hr/leave-balance, /hr/policies/search, /it/tickets, /it/tickets/status.
// It is safe for concurrent use.
type Backend struct {
	key []byte
	now func() time.Time

	mu      sync.Mutex
	calls   []Call
	tickets []ticket // guarded by mu; seeded, then appended by createTicket
	nextID  int
}

// New returns a backend that accepts identities signed with hmacKey (an
// empty key refuses every request). now is the clock for signature skew and
// dates in answers; nil means time.Now.
func New(hmacKey []byte, now func() time.Time) *Backend {
	if now == nil {
		now = time.Now
	}
	return &Backend{key: hmacKey, now: now, tickets: seedTickets(), nextID: firstFreeTicket}
}

// handler answers one endpoint for a verified identity. It returns the
// status and a value to encode as JSON.
type handler func(b *Backend, id skills.SignedIdentity, body []byte) (int, any)

var routes = map[string]handler{
	"/hr/leave-balance":   (*Backend).leaveBalance,
	"/hr/policies/search": (*Backend).searchPolicies,
	"/it/tickets":         (*Backend).createTicket,
	"/it/tickets/status":  (*Backend).ticketStatus,
}

// errorBody is how the backend explains a refusal; the text reaches the
// model through the skill's error, so it is written for the employee.
type errorBody struct {
	Error string `json:"error"`
}

func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, ok := routes[r.URL.Path]
	if !ok {
		writeJSON(w, http.StatusNotFound, errorBody{"没有这个接口：" + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{"只支持 POST"})
		return
	}
	id, err := skills.VerifyIdentity(r, b.key, b.now(), 0)
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, errorBody{"身份校验失败：" + reason(err)})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{"请求体过大"})
		return
	}
	status, out := h(b, id, body)
	b.mu.Lock()
	b.calls = append(b.calls, Call{Path: r.URL.Path, Identity: id, UserName: skills.UserName(r),
		RequestID: r.Header.Get(skills.HeaderRequestID), Body: string(body), Status: status})
	b.mu.Unlock()
	writeJSON(w, status, out)
}

// Calls returns the accepted requests in arrival order.
func (b *Backend) Calls() []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.calls)
}

func reason(err error) string {
	switch {
	case errors.Is(err, skills.ErrIdentityMissing):
		return "缺少身份签名"
	case errors.Is(err, skills.ErrIdentityExpired):
		return "签名已过期"
	default:
		return "签名无效"
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // keep “年假” readable for the model and in traces
	_ = enc.Encode(v)        // the client went away; nothing to tell it
}

// decodeArgs reads a JSON object body into v; an empty body is {}.
func decodeArgs(body []byte, v any) error {
	if len(body) == 0 {
		return nil
	}
	return json.Unmarshal(body, v)
}
