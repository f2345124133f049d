package skills

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Live holds the current Registry and swaps it atomically on reload
// (SIGHUP in the gateway). A run binds its tools from Load() once, so
// in-flight runs keep the tools they were given while new runs see the new
// set. The zero value holds no registry. Safe for concurrent use.
type Live struct {
	cur    atomic.Pointer[Registry]
	reload sync.Mutex // one reload at a time, so the last one wins cleanly
}

// NewLive returns a Live holding reg.
func NewLive(reg *Registry) *Live {
	l := &Live{}
	l.cur.Store(reg)
	return l
}

// Load returns the current registry (nil before the first successful
// Reload of a zero Live).
func (l *Live) Load() *Registry { return l.cur.Load() }

// Reload builds a new registry and makes it current. If build fails (a
// broken SKILL.md, a fallback that does not exist...) the error is returned
// and the current set stays: a bad edit never takes skills away. The old
// registry is not closed, since runs may still hold its tools; share
// Options.MCP between registries so reloads open no new MCP sessions.
func (l *Live) Reload(build func() (*Registry, error)) error {
	l.reload.Lock()
	defer l.reload.Unlock()
	reg, err := build()
	if err != nil {
		return fmt.Errorf("skills: reload refused, keeping the current skills: %w", err)
	}
	if reg == nil {
		return errors.New("skills: reload refused, keeping the current skills: the builder returned no registry")
	}
	l.cur.Store(reg)
	return nil
}
