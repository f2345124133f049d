package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

// fakeGateway plays the gateway's side of async skills: it hands out
// callback URLs and keeps the callbacks it receives, verified.
type fakeGateway struct {
	t    *testing.T
	url  string
	reg  func() *skills.Registry
	mu   sync.Mutex
	n    int
	got  map[string]skills.AsyncCallback // callback path → verified body
	who  map[string]string               // callback path → user who began
	task map[string]string               // callback URL → task id of the 202
	fail error
}

func newFakeGateway(t *testing.T) *fakeGateway {
	g := &fakeGateway{t: t, got: map[string]skills.AsyncCallback{}, who: map[string]string{}, task: map[string]string{}}
	g.url = serverURL(t, g)
	return g
}

func (g *fakeGateway) Begin(_ context.Context, c skills.Caller, skill string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail != nil {
		return "", g.fail
	}
	g.n++
	path := fmt.Sprintf("/v1/async/%s-%d", skill, g.n)
	g.who[path] = c.UserID
	return g.url + path, nil
}

func (g *fakeGateway) Accepted(_ context.Context, callbackURL, taskID string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.task[callbackURL] = taskID
	return nil
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, err := g.reg().CallbackKey("it_vpn_access")
	if err != nil {
		g.t.Errorf("CallbackKey: %v", err)
	}
	cb, err := skills.VerifyCallback(r, path.Base(r.URL.Path), key, testNow, 0)
	if err != nil {
		g.t.Errorf("callback %s: %v", r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	g.mu.Lock()
	g.got[r.URL.Path] = cb
	g.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func TestAsync_DemoVPN(t *testing.T) {
	backend := demobackend.New(testKey, func() time.Time { return testNow })
	gw := newFakeGateway(t)
	reg := sampleRegistry(t, backend, gw)
	gw.reg = func() *skills.Registry { return reg }

	res, err := reg.Call(context.Background(), zhang, "it_vpn_access", json.RawMessage(`{"reason":"下周出差","days":7}`))
	if err != nil || res.Status != http.StatusAccepted || res.Async == nil || res.Async.TaskID != "VPN-1001" {
		t.Fatalf("Call = %+v, %v; want 202 with task VPN-1001", res, err)
	}
	calls := backend.Calls()
	if len(calls) != 1 || calls[0].CallbackURL != res.Async.CallbackURL || !strings.HasPrefix(calls[0].CallbackURL, gw.url+"/v1/async/") {
		t.Fatalf("backend saw callback %q, Result says %q", calls[0].CallbackURL, res.Async.CallbackURL)
	}
	if len(gw.got) != 0 {
		t.Fatalf("callback before CompleteAsync")
	}
	if err := backend.CompleteAsync(context.Background()); err != nil {
		t.Fatalf("CompleteAsync: %v", err)
	}
	cbPath := strings.TrimPrefix(res.Async.CallbackURL, gw.url)
	cb := gw.got[cbPath]
	if cb.TaskID != "VPN-1001" || cb.Status != skills.AsyncSucceeded || !strings.Contains(cb.Message, "张三") ||
		!strings.Contains(string(cb.Result), `"days":7`) || gw.who[cbPath] != "zhangsan" {
		t.Errorf("callback = %+v (began by %s)", cb, gw.who[cbPath])
	}
	if gw.task[res.Async.CallbackURL] != "VPN-1001" {
		t.Errorf("task ids recorded at the 202: %v", gw.task)
	}
	if len(backend.Pending()) != 0 {
		t.Errorf("pending after completion: %v", backend.Pending())
	}
}

func TestAsync_Failures(t *testing.T) {
	backend := demobackend.New(testKey, func() time.Time { return testNow })
	t.Run("NoRegistrar", func(t *testing.T) {
		reg := sampleRegistry(t, backend, nil)
		_, err := reg.Call(context.Background(), zhang, "it_vpn_access", json.RawMessage(`{"reason":"出差","days":1}`))
		if !errors.Is(err, skills.ErrMisconfigured) {
			t.Errorf("err = %v, want ErrMisconfigured", err)
		}
	})
	t.Run("RegistrarFails", func(t *testing.T) {
		gw := newFakeGateway(t)
		gw.fail = errors.New("public_url not configured")
		reg := sampleRegistry(t, backend, gw)
		_, err := reg.Call(context.Background(), zhang, "it_vpn_access", json.RawMessage(`{"reason":"出差","days":1}`))
		if !errors.Is(err, skills.ErrUnavailable) || !strings.Contains(err.Error(), "public_url") {
			t.Errorf("err = %v, want ErrUnavailable", err)
		}
	})
	if n := len(backend.Calls()); n != 0 {
		t.Errorf("backend called %d times without a callback URL", n)
	}
}

func TestCallback_Signature(t *testing.T) {
	cb := skills.AsyncCallback{TaskID: "T-1", Status: skills.AsyncFailed, Message: "审批被拒"}
	newReq := func() *http.Request {
		req, err := skills.NewCallbackRequest(context.Background(), "http://gw.test/v1/async/tok-1", cb, testKey, testNow)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	t.Run("OK", func(t *testing.T) {
		got, err := skills.VerifyCallback(newReq(), "tok-1", testKey, testNow, 0)
		if err != nil || got.TaskID != "T-1" {
			t.Fatalf("VerifyCallback = %+v, %v", got, err)
		}
	})
	t.Run("ErrOtherTimestamp", func(t *testing.T) {
		req := newReq()
		req.Header.Set(skills.HeaderTimestamp, fmt.Sprint(testNow.Unix()+1)) // replayed with another time
		if _, err := skills.VerifyCallback(req, "tok-1", testKey, testNow, 0); !errors.Is(err, skills.ErrIdentityInvalid) {
			t.Errorf("tampered timestamp: err = %v", err)
		}
	})
	// The signature covers the token: a result signed for one call's URL
	// is refused at another call's URL.
	t.Run("ErrOtherToken", func(t *testing.T) {
		if _, err := skills.VerifyCallback(newReq(), "tok-2", testKey, testNow, 0); !errors.Is(err, skills.ErrIdentityInvalid) {
			t.Errorf("callback posted to another token: err = %v, want ErrIdentityInvalid", err)
		}
	})
	t.Run("Format", func(t *testing.T) {
		body := []byte(`{"task_id":"T-1"}`)
		want := "HERMES-HMAC-SHA256-v2-callback\ntok-1\n1772355600\n" + skills.BodySHA256(body)
		if got := skills.CallbackStringToSign("tok-1", testNow.Unix(), body); got != want {
			t.Errorf("CallbackStringToSign = %q, want %q", got, want)
		}
	})
	if _, err := skills.DecodeCallback([]byte(`{"task_id":"T","status":"done"}`)); !errors.Is(err, skills.ErrCallbackMalformed) {
		t.Errorf("bad status: err = %v", err)
	}
}

// TestAsync_OpenBreakerRegistersNothing: a call refused by an open breaker
// must not leave a callback registered that no backend will ever answer.
func TestAsync_OpenBreakerRegistersNothing(t *testing.T) {
	gw := newFakeGateway(t)
	s := &skills.Skill{Name: "it_vpn_access", Description: "vpn", Endpoint: "/vpn", Async: true,
		Breaker: &skills.BreakerPolicy{Failures: 1, OpenFor: time.Hour}, Identity: skills.IdentityConfig{None: true}}
	reg, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{BaseURL: serverURL(t, &recorder{status: 503}), Async: gw})
	if err != nil {
		t.Fatal(err)
	}
	reg.Call(context.Background(), zhang, s.Name, nil) // 503 opens the breaker
	_, err = reg.Call(context.Background(), zhang, s.Name, nil)
	if !errors.Is(err, skills.ErrCircuitOpen) || gw.n != 1 {
		t.Errorf("err = %v, callbacks registered %d; want the open breaker to refuse before Begin", err, gw.n)
	}
}
