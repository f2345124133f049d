package config

import "time"

// Defaults of the listener timeouts.
const (
	DefaultReadTimeout = 10 * time.Second
	DefaultIdleTimeout = 60 * time.Second
)

// ApplyTimeoutDefaults fills server.read_timeout and server.idle_timeout;
// NewHTTPServer calls it too, so a config not from Parse still gets bounds.
func (c *ServerConfig) ApplyTimeoutDefaults() {
	if c.ReadTimeout == 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
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
}
