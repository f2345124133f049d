package channels_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hermes-gw/hermes/channels"
)

// lifeSection is a section whose Build keeps the ctx it was given.
type lifeSection struct {
	Name  string
	built *context.Context
}

var errNameless = errors.New("name: required")

func (s *lifeSection) ApplyDefaults() {}
func (s *lifeSection) Validate() error {
	if s.Name == "" {
		return errNameless
	}
	return nil
}
func (s *lifeSection) Build(ctx context.Context, _ channels.Env) (channels.Channel, error) {
	*s.built = ctx
	return nil, nil
}

type lifeKey struct{}

// The gateway's lifetime reaches the channel: Build gets Platform.New's
// ctx, so what the channel starts on its own can end with it.
func TestNewPlatformBuildsWithItsContext(t *testing.T) {
	var built context.Context
	p := channels.NewPlatform[lifeSection]("life")
	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), lifeKey{}, "gateway"))
	decode := func(v any) error { v.(*lifeSection).Name, v.(*lifeSection).built = "x", &built; return nil }
	if _, err := p.New(ctx, decode, channels.Env{}); err != nil {
		t.Fatal(err)
	}
	if built == nil || built.Value(lifeKey{}) != "gateway" {
		t.Fatalf("Build got %v, want New's ctx", built)
	}
	cancel()
	if built.Err() == nil {
		t.Fatal("the channel's ctx did not end with the gateway's")
	}
	// Validation still comes first: no Build for an invalid section.
	built = nil
	nameless := func(v any) error { v.(*lifeSection).built = &built; return nil }
	if _, err := p.New(t.Context(), nameless, channels.Env{}); !errors.Is(err, errNameless) || built != nil {
		t.Fatalf("New = %v (built %v), want the validation error and no Build", err, built)
	}
}
