package modellimit

import (
	"context"
	"io"
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
// retry-after-ms of 429 answers into the request's retryAfter, and gives
// each request its deadline (model.timeout), reading the body included.
type retryAfterTransport struct {
	base    http.RoundTripper
	timeout time.Duration // 0: none
}

func (t retryAfterTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.timeout <= 0 {
		return t.roundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.roundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends a request's deadline when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	defer b.cancel()
	return b.ReadCloser.Close()
}

func (t retryAfterTransport) roundTrip(req *http.Request) (*http.Response, error) {
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
// reads Retry-After. model.timeout is a deadline on each request's
// context, not http.Client.Timeout: net/http runs that one with two
// goroutines per call in flight (a timer and its legacy cancel), 2,400
// goroutines and their stacks for 1,200 calls waiting on the model.
func HTTPClient(cfg config.ModelConfig) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConns = max(base.MaxIdleConns, cfg.MaxConcurrent)
	base.MaxIdleConnsPerHost = cfg.MaxConcurrent
	return &http.Client{Transport: retryAfterTransport{base: base, timeout: cfg.Timeout}}
}
