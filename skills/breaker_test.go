package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// handlerTransport serves requests in-process: no sockets, so a
// testing/synctest bubble can advance its fake clock.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	w := httptest.NewRecorder()
	t.h.ServeHTTP(w, r)
	return w.Result(), nil
}

// flaky answers 503 on /primary while down, 200 otherwise, and counts.
type flaky struct {
	mu   sync.Mutex
	down bool
	hits map[string]int
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hits[r.URL.Path]++
	if f.down && r.URL.Path == "/primary" {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Write([]byte(`{"from":"` + r.URL.Path + `"}`))
}

func (f *flaky) set(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

func (f *flaky) hit(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

// TestBreaker drives gobreaker's clock with testing/synctest: time.Sleep
// inside the bubble moves a fake clock, so the 5-minute open period passes
// instantly and exactly.
func TestBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		backend := &flaky{down: true, hits: map[string]int{}}
		defs := []*skills.Skill{
			{Name: "it_vpn_reset", Description: "reset", Endpoint: "http://it.test/primary", Confirm: &skills.ConfirmPolicy{},
				Breaker: &skills.BreakerPolicy{Failures: 3, OpenFor: 5 * time.Minute}, Fallback: "it_ticket_fallback"},
			{Name: "it_ticket_fallback", Description: "ticket for the IT desk", Endpoint: "http://it.test/fallback"},
			{Name: "hr_plain", Description: "no fallback", Endpoint: "http://it.test/primary",
				Breaker: &skills.BreakerPolicy{Failures: 1, OpenFor: time.Minute}},
		}
		reg, err := skills.NewRegistry(unsigned(defs...), skills.Options{HTTPClient: &http.Client{Transport: handlerTransport{backend}},
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		call := func(name string) (skills.Result, error) {
			return reg.Call(context.Background(), zhang, name, nil)
		}

		for i := 1; i <= 3; i++ {
			if _, err := call("it_vpn_reset"); !errors.Is(err, skills.ErrUnavailable) || errors.Is(err, skills.ErrCircuitOpen) {
				t.Fatalf("call %d: err = %v, want the backend's 503", i, err)
			}
		}
		if got := reg.BreakerState("it_vpn_reset"); got != "open" {
			t.Fatalf("after 3 failures the breaker is %q, want open", got)
		}

		// Open: the backend is left alone and the fallback answers.
		res, err := call("it_vpn_reset")
		if err != nil || res.Fallback != "it_ticket_fallback" || res.Skill != "it_ticket_fallback" || string(res.Body) != `{"from":"/fallback"}` {
			t.Fatalf("while open: res = %+v, err = %v, want the fallback's answer", res, err)
		}
		if backend.hit("/primary") != 3 {
			t.Errorf("the open breaker let %d requests through, want 3", backend.hit("/primary"))
		}

		// Half-open after open_for: one probe; it fails, so open again.
		time.Sleep(5*time.Minute + time.Second)
		if got := reg.BreakerState("it_vpn_reset"); got != "half-open" {
			t.Fatalf("after open_for the breaker is %q, want half-open", got)
		}
		if _, err := call("it_vpn_reset"); !errors.Is(err, skills.ErrUnavailable) || backend.hit("/primary") != 4 {
			t.Fatalf("probe: err = %v, primary hits %d, want one failed probe", err, backend.hit("/primary"))
		}
		if res, _ := call("it_vpn_reset"); res.Fallback == "" || backend.hit("/primary") != 4 {
			t.Fatalf("after a failed probe: res = %+v, hits %d, want open again", res, backend.hit("/primary"))
		}

		// The backend recovers: the next probe closes the breaker.
		backend.set(false)
		time.Sleep(5*time.Minute + time.Second)
		if res, err := call("it_vpn_reset"); err != nil || res.Fallback != "" || string(res.Body) != `{"from":"/primary"}` {
			t.Fatalf("probe after recovery: res = %+v, err = %v", res, err)
		}
		if got := reg.BreakerState("it_vpn_reset"); got != "closed" {
			t.Errorf("after a good probe the breaker is %q, want closed", got)
		}

		// Without a fallback an open breaker is an error the agent can
		// explain, and other skills' breakers are their own.
		backend.set(true)
		call("hr_plain")
		if _, err := call("hr_plain"); !errors.Is(err, skills.ErrCircuitOpen) || !errors.Is(err, skills.ErrUnavailable) {
			t.Errorf("hr_plain: err = %v, want ErrCircuitOpen", err)
		}
		if got := reg.BreakerState("it_vpn_reset"); got != "closed" {
			t.Errorf("it_vpn_reset's breaker is %q after hr_plain's failures, want closed", got)
		}
	})
}

// TestBreaker_IgnoresRefusals: a 4xx is the backend working, not failing.
func TestBreaker_IgnoresRefusals(t *testing.T) {
	rec := &recorder{status: http.StatusForbidden}
	s := hrSkill()
	s.Breaker = &skills.BreakerPolicy{Failures: 1, OpenFor: time.Hour}
	tool := bind(t, rec, s, zhang, secrets)
	for range 3 {
		if _, err := tool.Call(context.Background(), json.RawMessage(`{"days":1}`)); errors.Is(err, skills.ErrCircuitOpen) {
			t.Fatalf("a refusal opened the breaker: %v", err)
		}
	}
	if rec.count() != 3 {
		t.Errorf("backend saw %d calls, want 3", rec.count())
	}
}

// breakerChange is one call of Options.OnBreakerChange.
type breakerChange struct {
	skill, from, to string
	at              time.Time
}

// TestBreaker_OnBreakerChange: a backend answering 500 trips the breaker,
// and the hook hears closed→open once, at the registry's clock, during
// the call that tripped it; the refused call after it changes nothing.
func TestBreaker_OnBreakerChange(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	at := time.Date(2026, 12, 3, 10, 17, 0, 0, time.UTC)
	var mu sync.Mutex
	var changes []breakerChange
	reg, err := skills.NewRegistry(unsigned(&skills.Skill{Name: "it_vpn_reset", Description: "reset", Endpoint: srv.URL + "/reset",
		Breaker: &skills.BreakerPolicy{Failures: 2, OpenFor: time.Hour}}), skills.Options{
		Now: func() time.Time { return at }, Logger: slog.New(slog.DiscardHandler),
		OnBreakerChange: func(skill, from, to string, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			changes = append(changes, breakerChange{skill, from, to, at})
		}})
	if err != nil {
		t.Fatal(err)
	}
	heard := func() []breakerChange {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(changes)
	}
	if _, err := reg.Call(context.Background(), zhang, "it_vpn_reset", nil); !errors.Is(err, skills.ErrUnavailable) || errors.Is(err, skills.ErrCircuitOpen) {
		t.Fatalf("first call: err = %v, want the backend's 500", err)
	}
	if got := heard(); len(got) != 0 {
		t.Fatalf("after one failure of two the hook heard %+v, want nothing", got)
	}
	reg.Call(context.Background(), zhang, "it_vpn_reset", nil)
	if _, err := reg.Call(context.Background(), zhang, "it_vpn_reset", nil); !errors.Is(err, skills.ErrCircuitOpen) {
		t.Fatalf("third call: err = %v, want refused by the open breaker", err)
	}
	want := []breakerChange{{"it_vpn_reset", "closed", "open", at}}
	if got := heard(); !slices.Equal(got, want) {
		t.Errorf("the hook heard %+v, want %+v", got, want)
	}
}
