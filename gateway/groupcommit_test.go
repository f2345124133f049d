package gateway_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// A process acknowledging callbacks in shared transactions is killed (kill
// -9) while 32 callers post at once: every callback it answered 200 is
// stored, with its job; none is stored twice.
func TestKilledMidBatchLosesNoAckedMessage(t *testing.T) {
	t.Parallel()
	gatewaytest.Heavy(t)
	h := gatewaytest.New(t)
	cfgPath := filepath.Join(t.TempDir(), "hermes.yaml")
	if err := os.WriteFile(cfgPath, []byte(h.ConfigYAML("")), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	acker := exec.Command(os.Args[0], "-test.run=^$")
	acker.Env = append(os.Environ(), workerProcessEnv+"="+cfgPath, ackProcessEnv+"="+addr)
	acker.Stdout, acker.Stderr = t.Output(), t.Output()
	if err := acker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = acker.Process.Kill(); _, _ = acker.Process.Wait() })
	ctx := gatewaytest.WithTimeout(t, 90*time.Second)
	gatewaytest.WaitFor(t, ctx, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})

	const callers, perCaller, killAfter = 32, 100, 600
	var acked sync.Map // message id → true, for each 200
	var oks atomic.Int32
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 10 * time.Second}
	for c := range callers {
		wg.Go(func() {
			for i := range perCaller {
				msgID := fmt.Sprintf("%d", 500000+c*perCaller+i)
				u, body := h.CallbackRequest(gatewaytest.TextXML(fmt.Sprintf("user%02d", c), "我还有几天年假？", msgID), time.Now())
				u = "http://" + addr + u[len(h.Srv.URL):]
				resp, err := client.Post(u, "text/xml", bytes.NewReader(body))
				if err != nil {
					return // killed
				}
				resp.Body.Close()
				if resp.StatusCode == 200 {
					acked.Store(msgID, true)
					if oks.Add(1) == killAfter {
						once.Do(func() { _ = acker.Process.Kill(); close(killed) })
					}
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("only %d callbacks acknowledged; the process was never killed", oks.Load())
	}
	var exitErr *exec.ExitError
	if err := acker.Wait(); !errors.As(err, &exitErr) {
		t.Fatalf("acker exit: %v, want killed", err)
	}

	lost := 0
	acked.Range(func(k, _ any) bool {
		n := h.Count(`SELECT count(*) FROM inbound_messages m JOIN river_job j
			ON j.kind = 'hermes.process_inbound' AND (j.args->>'inbound_id')::bigint = m.id
			WHERE m.platform_msg_id = $1`, k.(string))
		if n != 1 {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged message %s: %d stored with a job, want 1", k, n)
			}
		}
		return true
	})
	if n := int(oks.Load()); lost > 0 || n < killAfter {
		t.Errorf("%d of %d acknowledged messages lost", lost, n)
	}
	stored := h.Count(`SELECT count(*) FROM inbound_messages`)
	t.Logf("%d acknowledged, %d stored when killed (a batch committed but killed before its 200s went out is sent again by the platform and stored once)", oks.Load(), stored)
	if stored < int(oks.Load()) {
		t.Errorf("%d stored < %d acknowledged", stored, oks.Load())
	}
}

// The same message delivered sixteen times at once (a platform retrying
// while the first is being stored) is stored once with one job, and every
// delivery is answered 200.
func TestConcurrentRepeatsStoreOnce(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{Queues: map[string]int{}, Partial: true})
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "我还有几天年假？", "8801"), time.Now())
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if status, _ := gatewaytest.Post(t, u, body); status != 200 {
				t.Errorf("a delivery answered %d", status)
			}
		})
	}
	wg.Wait()
	if n := h.Count(`SELECT count(*) FROM inbound_messages WHERE platform_msg_id = '8801'`); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}
	if n := h.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.process_inbound'`); n != 1 {
		t.Errorf("%d jobs, want 1", n)
	}
}
