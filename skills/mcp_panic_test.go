package skills

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermes-gw/hermes/channels/guard"
)

// TestMCPConnectPanicFailsTheSessionOnly: a connect that panics (the SDK
// reading a server's answer it does not handle) fails that call with
// ErrPanic, never the process, and the next call connects again.
func TestMCPConnectPanicFailsTheSessionOnly(t *testing.T) {
	m := NewMCPClients()
	ctx := context.Background()
	_, _, err := m.get(ctx, "srv", func() (*mcp.ClientSession, error) { panic("index out of range") })
	if !errors.Is(err, guard.ErrPanic) {
		t.Fatalf("err %v, want ErrPanic", err)
	}
	calls := 0
	_, fresh, err := m.get(ctx, "srv", func() (*mcp.ClientSession, error) { calls++; return nil, errors.New("refused") })
	if !fresh || calls != 1 || err == nil || errors.Is(err, guard.ErrPanic) {
		t.Fatalf("after the panic: fresh %v, %d connects, err %v; want a new connect", fresh, calls, err)
	}
}
