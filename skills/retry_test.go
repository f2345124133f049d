package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// scripted answers each request with the next status of its script (the
// last one repeats) and counts requests.
type scripted struct {
	mu       sync.Mutex
	statuses []int
	header   http.Header
	n        int
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	status := s.statuses[min(s.n, len(s.statuses)-1)]
	s.n++
	s.mu.Unlock()
	for k, v := range s.header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"status":%d}`, status)
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// sleeps records the waits a registry asked for instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func retrySkill() *skills.Skill {
	s := hrSkill()
	s.Method = "PUT"
	s.Retry = skills.RetryPolicy{MaxAttempts: 4, Backoff: 100 * time.Millisecond, MaxBackoff: 250 * time.Millisecond}
	return s
}

func retryRegistry(t *testing.T, backend http.Handler, s *skills.Skill, sl *sleeps) *skills.Registry {
	t.Helper()
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	reg, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{BaseURL: srv.URL, Getenv: secrets, Sleep: sl.sleep})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name      string
		statuses  []int
		on        []string
		header    http.Header
		wantCalls int
		wantWaits []time.Duration
		wantErr   error // nil: success
	}{
		{"5xxThenOK", []int{503, 502, 200}, nil, nil, 3, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, nil},
		{"GivesUpAfterMaxAttempts", []int{500}, nil, nil, 4,
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond}, skills.ErrUnavailable},
		{"4xxNotRetried", []int{400, 200}, nil, nil, 1, nil, skills.ErrRefused},
		{"429HonoursRetryAfter", []int{429, 200}, nil, http.Header{"Retry-After": {"1"}}, 2, []time.Duration{250 * time.Millisecond}, nil},
		// The model's reader and the skills' are one: milliseconds count too.
		{"429HonoursRetryAfterMs", []int{429, 200}, nil, http.Header{"Retry-After-Ms": {"150"}}, 2, []time.Duration{150 * time.Millisecond}, nil},
		{"429NotListed", []int{429, 200}, []string{skills.RetryOn5xx}, nil, 1, nil, skills.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backend := &scripted{statuses: tc.statuses, header: tc.header}
			s := retrySkill()
			s.Retry.On = tc.on
			sl := &sleeps{}
			reg := retryRegistry(t, backend, s, sl)
			res, err := reg.Call(context.Background(), zhang, s.Name, json.RawMessage(`{"days":1}`))
			switch {
			case tc.wantErr == nil && (err != nil || res.Status != 200):
				t.Errorf("res = %+v, err = %v, want success", res, err)
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if backend.count() != tc.wantCalls {
				t.Errorf("backend called %d times, want %d", backend.count(), tc.wantCalls)
			}
			if fmt.Sprint(sl.d) != fmt.Sprint(tc.wantWaits) {
				t.Errorf("waits = %v, want %v", sl.d, tc.wantWaits)
			}
		})
	}
}

func TestRetry_Timeout(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		io.ReadAll(r.Body) // the server notices the client hanging up only once the body is read
		if first {
			<-r.Context().Done() // the first attempt hangs until Hermes gives up on it
			return
		}
		w.Write([]byte(`{"ok":true}`))
	})
	s := retrySkill()
	s.Timeout = 50 * time.Millisecond
	sl := &sleeps{}
	reg := retryRegistry(t, backend, s, sl)
	res, err := reg.Call(context.Background(), zhang, s.Name, json.RawMessage(`{"days":1}`))
	if err != nil || string(res.Body) != `{"ok":true}` || len(sl.d) != 1 {
		t.Errorf("res = %s, err = %v, waits %v; want the second attempt's answer", res.Body, err, sl.d)
	}
}

func TestRetry_JitterStaysInRange(t *testing.T) {
	s := retrySkill()
	s.Retry.Jitter = 0.5
	sl := &sleeps{}
	reg := retryRegistry(t, &scripted{statuses: []int{500}}, s, sl)
	_, err := reg.Call(context.Background(), zhang, s.Name, json.RawMessage(`{"days":1}`))
	if !strings.Contains(fmt.Sprint(err), "after 4 attempts") {
		t.Errorf("err = %v", err)
	}
	if len(sl.d) != 3 || sl.d[0] < 50*time.Millisecond || sl.d[0] > 151*time.Millisecond {
		t.Errorf("waits = %v, want the first within 100ms±50%%", sl.d)
	}
}
