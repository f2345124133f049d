package guard_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/channels/guard"
)

func TestRun(t *testing.T) {
	t.Run("Panic", func(t *testing.T) {
		err := guard.Run(func() error {
			var s []int
			_ = s[3] // index out of range
			return nil
		})
		if !errors.Is(err, guard.ErrPanic) || !strings.Contains(err.Error(), "index out of range") {
			t.Fatalf("got %v, want an ErrPanic naming the panic", err)
		}
	})
	t.Run("Error", func(t *testing.T) {
		want := errors.New("read: EOF")
		if err := guard.Run(func() error { return want }); err != want {
			t.Fatalf("got %v, want %v", err, want)
		}
	})
}
