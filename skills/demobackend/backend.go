package demobackend

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// maxBodyBytes bounds a request body; the sample skills send a few fields.
const maxBodyBytes = 64 << 10

// Call is one request the backend accepted, with the identity it verified.
type Call struct {
	Path        string
	Identity    skills.SignedIdentity // from the signed headers, never from the body
	UserName    string                // X-Hermes-User-Name, decoded (unsigned)
	RequestID   string                // X-Request-ID
	Traceparent string                // W3C traceparent
	CallbackURL string                // X-Hermes-Callback-URL (async endpoints)
	// IdempotencyKey is the Idempotency-Key Hermes sends with writes.
	IdempotencyKey string
	ContentType    string
	Body           string // as received, to show body fields did not decide the user
	Status         int    // HTTP status answered
}

// Options configure a Backend.
type Options struct {
	// HMACKey is the identity key of the HR endpoints, shared with the
	// hr_* skills; empty refuses every request to them.
	HMACKey []byte
	// ITKey is the identity key of the IT endpoints (and of the async
	// callbacks they send): in a company HR and IT are separate backends,
	// each with its own key. Empty: HMACKey.
	ITKey []byte
	Now   func() time.Time // clock for signature skew and dates; default time.Now
	// HTTPClient posts async callbacks. Default: a client with a 10s timeout.
	HTTPClient *http.Client
	// AutoCompleteAfter, when positive, completes each accepted async task
	// on its own after this long (for `hermes demo`); zero waits for
	// CompleteAsync.
	AutoCompleteAfter time.Duration
}

// Backend is an http.Handler for the sample skills' endpoints (all POST):
// /hr/leave-balance, /hr/policies/search, /hr/payslip, /it/tickets,
// /it/tickets/status, /it/password/reset (form-encoded), /it/vpn/access
// (async: 202, then a callback), and for scheduled reports /it/tickets/weekly
// and /hr/team-leave. It is safe for concurrent use.
type Backend struct {
	opts Options

	mu      sync.Mutex
	calls   []Call
	tickets []ticket // guarded by mu; seeded, then appended by createTicket
	// created maps an Idempotency-Key to the ticket it created, so a
	// repeated request (a retry, a job run again after a crash) answers
	// the same ticket instead of opening a second one.
	created map[string]string
	nextID  int
	pending []pendingTask // accepted async work not yet reported
	nextVPN int
	nonces  *skills.NonceCache // refuses a signed request seen before
}

// New returns a backend that accepts identities signed with hmacKey (an
// empty key refuses every request). now is the clock for signature skew and
// dates in answers; nil means time.Now.
func New(hmacKey []byte, now func() time.Time) *Backend {
	return NewWithOptions(Options{HMACKey: hmacKey, Now: now})
}

// NewWithOptions returns a backend configured by opts.
func NewWithOptions(opts Options) *Backend {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &Backend{opts: opts, tickets: seedTickets(), nextID: firstFreeTicket, nextVPN: firstVPNTask,
		created: map[string]string{}, nonces: skills.NewNonceCache()}
}

// request is one verified request as a handler sees it.
type request struct {
	id     skills.SignedIdentity
	body   []byte
	header http.Header
}

// handler answers one endpoint for a verified identity. It returns the
// status and a value to encode as JSON.
type handler func(b *Backend, r request) (int, any)

// route is one endpoint: its handler, the skill it serves and the system
// (key) it belongs to. A request signed for another skill (the audience)
// is refused, so headers captured from one skill's call cannot be replayed
// to another endpoint.
type route struct {
	h      handler
	skill  string
	system string // systemHR or systemIT
}

const (
	systemHR = "hr"
	systemIT = "it"
)

var routes = map[string]route{
	"/hr/leave-balance":   {(*Backend).leaveBalance, "hr_leave_balance", systemHR},
	"/hr/policies/search": {(*Backend).searchPolicies, "hr_policy_search", systemHR},
	"/hr/payslip":         {(*Backend).payslip, "hr_payslip_summary", systemHR},
	"/it/tickets":         {(*Backend).createTicket, "it_ticket_create", systemIT},
	"/it/tickets/status":  {(*Backend).ticketStatus, "it_ticket_status", systemIT},
	"/it/password/reset":  {(*Backend).resetPassword, "it_password_reset", systemIT},
	"/it/vpn/access":      {(*Backend).requestVPN, "it_vpn_access", systemIT},
	"/it/tickets/weekly":  {(*Backend).ticketStats, "it_ticket_weekly", systemIT},
	"/hr/team-leave":      {(*Backend).teamLeave, "hr_team_leave", systemHR},
}

// key is the identity key of a system.
func (b *Backend) key(system string) []byte {
	if system == systemIT && len(b.opts.ITKey) > 0 {
		return b.opts.ITKey
	}
	return b.opts.HMACKey
}

// errorBody is how the backend explains a refusal; the text reaches the
// model through the skill's error, so it is written for the employee.
type errorBody struct {
	Error string `json:"error"`
}

func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	began := time.Now() // real time, whatever the demo clock says: this is a duration
	rt, ok := routes[r.URL.Path]
	if !ok {
		writeJSON(w, http.StatusNotFound, errorBody{"没有这个接口：" + r.URL.Path})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{"只支持 POST"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{"请求体过大"})
		return
	}
	// The signature covers method, host, path, query, this body, the
	// nonce and the skill: anything else is a replay or a forgery.
	id, err := skills.VerifyRequest(r, body, b.key(rt.system), skills.VerifyOptions{
		Audience: rt.skill, Now: b.opts.Now(), Nonces: b.nonces})
	if err != nil {
		writeJSON(w, http.StatusUnauthorized, errorBody{"身份校验失败：" + reason(err)})
		return
	}
	status, out := rt.h(b, request{id: id, body: body, header: r.Header})
	b.mu.Lock()
	b.calls = append(b.calls, Call{Path: r.URL.Path, Identity: id, UserName: skills.UserName(r),
		RequestID: r.Header.Get(skills.HeaderRequestID), Traceparent: r.Header.Get(skills.HeaderTraceparent),
		CallbackURL: r.Header.Get(skills.HeaderCallbackURL), IdempotencyKey: r.Header.Get(skills.HeaderIdempotencyKey),
		ContentType: r.Header.Get("Content-Type"),
		Body:        string(body), Status: status})
	b.mu.Unlock()
	// Seed 003: the backend reports its own processing time.
	w.Header().Set(skills.HeaderExecutionTime, strconv.FormatInt(time.Since(began).Milliseconds(), 10))
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
	case errors.Is(err, skills.ErrReplayed):
		return "重复的请求（nonce 已用过）"
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
