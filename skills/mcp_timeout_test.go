package skills_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
)

// silentServer is a TCP server that accepts connections and never
// answers (nor closes them).
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestMCP_TimeoutBoundsEachAttempt: against a server that accepts and
// never answers, each attempt (connect and initialize included) ends at
// the skill's timeout, so a call with retries returns within its
// attempts' timeouts plus the waits between them. The SDK's cleanup of a
// failed initialize (a cancellation sent to the silent server, up to 5 s)
// used to hold some attempts that much longer.
func TestMCP_TimeoutBoundsEachAttempt(t *testing.T) {
	addr := silentServer(t)
	s := &skills.Skill{Name: "hr_whoami", Description: "who am I", Executor: skills.ExecutorMCP, Endpoint: "http://" + addr + "/mcp",
		MCP: &skills.MCPConfig{Tool: "whoami"}, Timeout: 200 * time.Millisecond, Identity: skills.IdentityConfig{None: true},
		Retry: skills.RetryPolicy{MaxAttempts: 3, Backoff: 10 * time.Millisecond, MaxBackoff: 10 * time.Millisecond}}
	reg, err := skills.NewRegistry([]*skills.Skill{s}, skills.Options{Getenv: secrets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	// 3 × 200ms + 2 × 10ms of waits, and slack for a loaded machine.
	const bound = 3*200*time.Millisecond + 2*10*time.Millisecond + 400*time.Millisecond
	for i := range 4 { // the SDK's cleanup delay came about half the time
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		_, err := reg.Call(ctx, zhang, "hr_whoami", nil)
		late := ctx.Err()
		cancel()
		if late != nil {
			t.Fatalf("call %d: still running after %s (%v), want it over within the attempts' timeouts", i, bound, err)
		}
		if !errors.Is(err, skills.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) ||
			!strings.Contains(err.Error(), "no answer within 200ms") || !strings.Contains(err.Error(), "after 3 attempts") {
			t.Fatalf("call %d: %v, want the skill's timeout after 3 attempts", i, err)
		}
	}
}
