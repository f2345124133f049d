package config

import (
	"cmp"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"
	"time"
)

// OpsConfig are the operations keys: metrics, tracing, logs and the
// OpenAI-compatible API. Embedded in Config so their YAML keys are top-level.
type OpsConfig struct {
	Metrics   MetricsConfig   `yaml:"metrics"`
	Tracing   TracingConfig   `yaml:"tracing"`
	Log       LogConfig       `yaml:"log"`
	OpenAIAPI OpenAIAPIConfig `yaml:"openai_api"`
}

// MetricsConfig is GET /metrics.
type MetricsConfig struct {
	// Enabled serves /metrics in the Prometheus text format and records
	// the metrics. Default true.
	Enabled *bool `yaml:"enabled"`
}

// TracingConfig is OpenTelemetry tracing, off by default.
type TracingConfig struct {
	// OTLPEndpoint is the OTLP/HTTP collector spans go to, e.g.
	// http://otel-collector:4318 (the exporter adds /v1/traces). Empty
	// (default): tracing off, at no cost.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// ServiceName is service.name of the spans, default "hermes".
	ServiceName string `yaml:"service_name"`
}

// LogConfig is the process log on stderr.
type LogConfig struct {
	Format string `yaml:"format"` // "text" (default) or "json"
	Level  string `yaml:"level"`  // debug, info (default), warn, error
}

// OpenAIAPIConfig is the OpenAI-compatible API (POST /v1/chat/completions,
// GET /v1/models). No keys: it answers 404.
type OpenAIAPIConfig struct {
	// Keys map each client's key to the identity its turns run as.
	Keys []OpenAIKey `yaml:"keys"`
	// Models are the model ids clients may ask for; each is this gateway's
	// agent (on model.name). Default ["hermes"].
	Models []string `yaml:"models"`
	// MaxBodyBytes bounds a request body, default 1 MiB; more is 400.
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// MaxMessages bounds the messages of one request, default 100; more is 400.
	MaxMessages int `yaml:"max_messages"`
	// MaxConcurrentPerKey is how many requests of one key may run at once
	// on each replica, default 4; one more is answered 429 at once.
	MaxConcurrentPerKey int `yaml:"max_concurrent_per_key"`
	// RequestsPerMinutePerKey is how many requests one key may start per
	// minute on each replica (a token bucket as large as a minute's
	// worth, as router.rate_per_minute), default 60; more are 429.
	RequestsPerMinutePerKey int `yaml:"requests_per_minute_per_key"`
	// WriteTimeout bounds each write to a client (one batch of a stream's
	// events, a whole answer), default 10s. A client that takes longer, or
	// falls more than 256 KiB of events behind a stream, is dropped; its
	// run goes on and is recorded as if it had stayed.
	WriteTimeout time.Duration `yaml:"write_timeout"`
}

// OpenAIKey is one API key of the OpenAI-compatible API.
type OpenAIKey struct {
	Key    string `yaml:"key"`     // required, at least 16 characters, use ${ENV}; "Authorization: Bearer <key>"
	UserID string `yaml:"user_id"` // required: the identity skills see
	Name   string `yaml:"name"`    // the client's name (Open WebUI, ...); also the sessions' account
	CorpID string `yaml:"corp_id"` // corp of that identity
	// Models this key may use, a subset of openai_api.models; empty: all.
	Models []string `yaml:"models"`
	// MaxConcurrent and RequestsPerMinute override the section's
	// max_concurrent_per_key and requests_per_minute_per_key for this key;
	// 0: the section's.
	MaxConcurrent     int `yaml:"max_concurrent"`
	RequestsPerMinute int `yaml:"requests_per_minute"`
}

// Defaults of OpsConfig.
const (
	defaultOpenAIModel     = "hermes"
	defaultOpenAIBodyBytes = 1 << 20
	defaultOpenAIMessages  = 100
	// A person's chat client runs a turn or two at a time; a few more
	// leave room for a shared client without letting one key take the
	// model's slots from everyone else.
	defaultOpenAIConcurrentPerKey = 4
	defaultOpenAIPerMinutePerKey  = 60
	defaultOpenAIWriteTimeout     = 10 * time.Second
	defaultServiceName            = "hermes"
)

// MetricsOn reports whether /metrics is served and metrics recorded.
func (c MetricsConfig) MetricsOn() bool { return c.Enabled == nil || *c.Enabled }

func (c *OpsConfig) applyDefaults() {
	if len(c.OpenAIAPI.Models) == 0 {
		c.OpenAIAPI.Models = []string{defaultOpenAIModel}
	}
	positive(&c.OpenAIAPI.MaxBodyBytes, defaultOpenAIBodyBytes)
	positive(&c.OpenAIAPI.MaxMessages, defaultOpenAIMessages)
	c.OpenAIAPI.applyLimitDefaults()
	setDefault(&c.Tracing.ServiceName, defaultServiceName)
	setDefault(&c.Log.Format, "text")
	setDefault(&c.Log.Level, "info")
}

// logLevels are the values of log.level.
var logLevels = []string{"debug", "info", "warn", "error"}

func (c *OpsConfig) validate(bad func(key, format string, args ...any)) {
	if c.Tracing.OTLPEndpoint != "" && !isHTTPURL(c.Tracing.OTLPEndpoint) {
		bad("tracing.otlp_endpoint", "must be an http(s) URL, got %q", c.Tracing.OTLPEndpoint)
	}
	if c.Log.Format != "text" && c.Log.Format != "json" {
		bad("log.format", "must be text or json, got %q", c.Log.Format)
	}
	if !slices.Contains(logLevels, strings.ToLower(c.Log.Level)) {
		bad("log.level", "must be one of %s, got %q", strings.Join(logLevels, ", "), c.Log.Level)
	}
	checkAPIKeys(bad, "openai_api.keys", len(c.OpenAIAPI.Keys), func(i int) (string, string) {
		return c.OpenAIAPI.Keys[i].Key, c.OpenAIAPI.Keys[i].UserID
	})
	for i, k := range c.OpenAIAPI.Keys {
		for _, m := range k.Models {
			if !slices.Contains(c.OpenAIAPI.Models, m) {
				bad(fmt.Sprintf("openai_api.keys[%d].models", i), "%q is not in openai_api.models", m)
			}
		}
	}
	c.OpenAIAPI.validateLimits(bad)
	c.OpenAIAPI.validateSessions(bad)
}

// minAPIKeyLen is the shortest API key accepted: shorter ones can be guessed.
const minAPIKeyLen = 16

// checkAPIKeys checks the n keys of an API section (router.api_keys,
// openai_api.keys): each long enough, unique, mapped to a user.
func checkAPIKeys(bad func(key, format string, args ...any), section string, n int, at func(i int) (key, userID string)) {
	seen := map[string]bool{}
	for i := range n {
		key, userID := at(i)
		name := fmt.Sprintf("%s[%d]", section, i)
		if len(key) < minAPIKeyLen {
			bad(name+".key", "required, at least %d characters", minAPIKeyLen)
		} else if seen[key] {
			bad(name+".key", "duplicate key")
		}
		seen[key] = true
		if userID == "" {
			bad(name+".user_id", "required")
		}
	}
}

// BearerKey finds the configured key an "Authorization: Bearer <key>"
// header names, comparing it with every key in constant time (so the time
// taken says nothing about which key matched, or how much of one).
func BearerKey[K any](header string, keys []K, keyOf func(K) string) (K, bool) {
	var found K
	token, ok := strings.CutPrefix(header, "Bearer ")
	match := 0
	for _, k := range keys {
		if subtle.ConstantTimeCompare([]byte(token), []byte(keyOf(k))) == 1 {
			found, match = k, 1
		}
	}
	return found, ok && token != "" && match == 1
}

// applyLimitDefaults fills the per-key limits and the write timeout.
func (c *OpenAIAPIConfig) applyLimitDefaults() {
	if c.MaxConcurrentPerKey == 0 {
		c.MaxConcurrentPerKey = defaultOpenAIConcurrentPerKey
	}
	if c.RequestsPerMinutePerKey == 0 {
		c.RequestsPerMinutePerKey = defaultOpenAIPerMinutePerKey
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = defaultOpenAIWriteTimeout
	}
}

// validateLimits refuses negative limits (zero is the default).
func (c *OpenAIAPIConfig) validateLimits(bad func(key, format string, args ...any)) {
	negative := func(name string, v int) {
		if v < 0 {
			bad(name, "must be positive, got %d", v)
		}
	}
	negative("openai_api.max_concurrent_per_key", c.MaxConcurrentPerKey)
	negative("openai_api.requests_per_minute_per_key", c.RequestsPerMinutePerKey)
	if c.WriteTimeout < 0 {
		bad("openai_api.write_timeout", "must be positive, got %s", c.WriteTimeout)
	}
	for i, k := range c.Keys {
		negative(fmt.Sprintf("openai_api.keys[%d].max_concurrent", i), k.MaxConcurrent)
		negative(fmt.Sprintf("openai_api.keys[%d].requests_per_minute", i), k.RequestsPerMinute)
	}
}

// validateSessions refuses two keys of the same identity (account and
// user_id): they would name the same sessions, and one key's holder could
// read the other's history. Rotating a key means a new name for the new
// one; its sessions start afresh.
func (c *OpenAIAPIConfig) validateSessions(bad func(key, format string, args ...any)) {
	first := map[[2]string]int{}
	for i, k := range c.Keys {
		id := [2]string{k.Account(), k.UserID}
		if j, ok := first[id]; ok {
			bad(fmt.Sprintf("openai_api.keys[%d]", i), "same name and user_id as openai_api.keys[%d]; give each key its own name (it names the key's sessions)", j)
			continue
		}
		first[id] = i
	}
}

// Account is the account of a key's sessions: its name, else its user.
func (k OpenAIKey) Account() string { return cmp.Or(k.Name, k.UserID) }

// LimitsOf are key's concurrency and per-minute limits.
func (c OpenAIAPIConfig) LimitsOf(key OpenAIKey) (concurrent, perMinute int) {
	return cmp.Or(key.MaxConcurrent, c.MaxConcurrentPerKey), cmp.Or(key.RequestsPerMinute, c.RequestsPerMinutePerKey)
}
