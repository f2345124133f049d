package modellimit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
)

// model.timeout bounds a call, its body included, as a deadline on the
// request's context: the request reaches the transport with that
// deadline and without the legacy cancel channel http.Client.Timeout
// sets (which net/http serves with two goroutines per call in flight).
func TestModelTimeoutIsARequestDeadline(t *testing.T) {
	stalled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // the model sends its headers, then nothing
		case <-stalled:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stalled)
	const timeout = 200 * time.Millisecond
	client := HTTPClient(config.ModelConfig{Timeout: timeout, MaxConcurrent: 4})
	var seen *http.Request
	tr := client.Transport.(retryAfterTransport)
	tr.base = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		seen = req
		return http.DefaultTransport.RoundTrip(req)
	})
	client.Transport = tr

	start := time.Now()
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("reading a stalled body: %v, want the deadline", err)
	}
	if seen.Cancel != nil { //nolint:staticcheck // the deprecated field is what the client's timeout sets
		t.Error("the request carries a legacy cancel channel: http.Client.Timeout is in use")
	}
	deadline, ok := seen.Context().Deadline()
	if !ok || deadline.Sub(start) > timeout+time.Second {
		t.Errorf("request deadline %v (set %v), want about %v after the start", deadline, ok, timeout)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
