package channels_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/channels"
)

func TestGuard(t *testing.T) {
	t.Run("Panic", func(t *testing.T) {
		err := channels.Guard(func() error {
			var s []int
			_ = s[3] // index out of range
			return nil
		})
		if !errors.Is(err, channels.ErrPanic) || !strings.Contains(err.Error(), "index out of range") {
			t.Fatalf("got %v, want an ErrPanic naming the panic", err)
		}
		var counted []string
		env := channels.Env{Panicked: func(ch, acc string) { counted = append(counted, ch+"/"+acc) }}
		if !env.CountPanic("feishu", "ops", err) || len(counted) != 1 || counted[0] != "feishu/ops" {
			t.Fatalf("CountPanic counted %v", counted)
		}
	})
	t.Run("Error", func(t *testing.T) {
		want := errors.New("read: EOF")
		if err := channels.Guard(func() error { return want }); err != want {
			t.Fatalf("got %v, want %v", err, want)
		}
		if (channels.Env{}).CountPanic("feishu", "ops", want) {
			t.Fatal("a plain error counted as a panic")
		}
	})
}
