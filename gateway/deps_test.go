package gateway_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
)

// TestQueuesOnlyWithPartial: a process that names its queues says it is a
// tool (Partial); Queues on a full replica are refused, before anything
// is built, instead of making a tool keep a replica's long connections
// and scheduler.
func TestQueuesOnlyWithPartial(t *testing.T) {
	t.Parallel()
	cfg, err := config.ParseConfig([]byte("database:\n  url: postgres://x@127.0.0.1/x\nmodel:\n  provider: offline\n"),
		func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, tc := range map[string]struct {
		deps gateway.Deps
		want error
	}{
		"FullReplica":     {gateway.Deps{}, nil},
		"Tool":            {gateway.Deps{Queues: map[string]int{"console_1": 2}, Partial: true}, nil},
		"InsertOnly":      {gateway.Deps{Queues: map[string]int{}, Partial: true}, nil},
		"QueuesNoPartial": {gateway.Deps{Queues: map[string]int{"console_1": 2}}, gateway.ErrQueuesNotPartial},
		"EmptyNoPartial":  {gateway.Deps{Queues: map[string]int{}}, gateway.ErrQueuesNotPartial},
	} {
		t.Run(name, func(t *testing.T) {
			if err := gateway.Check(ctx, cfg, tc.deps); !errors.Is(err, tc.want) {
				t.Fatalf("Check = %v, want %v", err, tc.want)
			}
		})
	}
}
