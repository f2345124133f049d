package config

import "time"

// Defaults of the listener timeouts.
const (
	DefaultReadTimeout   = 10 * time.Second
	DefaultIdleTimeout   = 60 * time.Second
	DefaultDrainDelay    = 5 * time.Second
	DefaultShutdownGrace = 30 * time.Second
)

// ApplyTimeoutDefaults fills server.read_timeout, idle_timeout,
// drain_delay and shutdown_grace;
// NewHTTPServer calls it too, so a config not from Parse still gets bounds.
func (c *ServerConfig) ApplyTimeoutDefaults() {
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.DrainDelay == 0 {
		c.DrainDelay = DefaultDrainDelay
	}
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
}

// validateTimeouts refuses negative server timeouts (zero is the default).
func (c *ServerConfig) validateTimeouts(bad func(key, format string, args ...any)) {
	if c.ReadTimeout < 0 {
		bad("server.read_timeout", "must be positive, got %s", c.ReadTimeout)
	}
	if c.IdleTimeout < 0 {
		bad("server.idle_timeout", "must be positive, got %s", c.IdleTimeout)
	}
	if c.DrainDelay < 0 {
		bad("server.drain_delay", "must be positive, got %s", c.DrainDelay)
	}
	if c.ShutdownGrace < 0 {
		bad("server.shutdown_grace", "must be positive, got %s", c.ShutdownGrace)
	}
}
