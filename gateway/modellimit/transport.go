package modellimit

import (
	"net/http"
	"sync"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/skills"
)

// retryAfter carries a 429's Retry-After from the HTTP transport to the
// call that got it (go-openai's errors do not carry headers).
type retryAfter struct {
	mu sync.Mutex
	d  time.Duration
	ok bool
}

type retryAfterKey struct{}

func (r *retryAfter) get() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.d, r.ok
}

// retryAfterTransport reads Retry-After (seconds or an HTTP date) and
// retry-after-ms of 429 answers into the request's retryAfter.
type retryAfterTransport struct{ base http.RoundTripper }

func (t retryAfterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests {
		return resp, err
	}
	ra, ok := req.Context().Value(retryAfterKey{}).(*retryAfter)
	if !ok {
		return resp, nil
	}
	if d, ok := skills.ParseRetryAfter(resp.Header, time.Now()); ok {
		ra.mu.Lock()
		ra.d, ra.ok = d, true
		ra.mu.Unlock()
	}
	return resp, nil
}

// HTTPClient is the HTTP client of the model: it keeps a connection
// per call in flight for reuse (the default keeps two per host, so
// hundreds of calls would open and close connections all the time), and
// reads Retry-After.
func HTTPClient(cfg config.ModelConfig) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConns = max(base.MaxIdleConns, cfg.MaxConcurrent)
	base.MaxIdleConnsPerHost = cfg.MaxConcurrent
	return &http.Client{Timeout: cfg.Timeout, Transport: retryAfterTransport{base: base}}
}
