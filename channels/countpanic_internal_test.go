package channels

import (
	"errors"
	"testing"

	"github.com/hermes-gw/hermes/channels/guard"
)

// A panic recovered by guard.Run is counted for its channel and account;
// a plain error is not.
func TestCountPanic(t *testing.T) {
	t.Run("Panic", func(t *testing.T) {
		err := guard.Run(func() error {
			var s []int
			_ = s[3] // index out of range
			return nil
		})
		var counted []string
		env := Env{Panicked: func(ch, acc string) { counted = append(counted, ch+"/"+acc) }}
		if !env.CountPanic("feishu", "ops", err) || len(counted) != 1 || counted[0] != "feishu/ops" {
			t.Fatalf("CountPanic counted %v", counted)
		}
	})
	t.Run("Error", func(t *testing.T) {
		if (Env{}).CountPanic("feishu", "ops", errors.New("read: EOF")) {
			t.Fatal("a plain error counted as a panic")
		}
	})
}
