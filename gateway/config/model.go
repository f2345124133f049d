package config

// The scopes of model.limits_scope.
const (
	LimitsReplica = "replica" // each replica has the limits to itself
	LimitsShared  = "shared"  // every replica on the database shares them
)

// MaxSharedConcurrent bounds model.max_concurrent when the limits are
// shared: each slot is a row that a waiting call may scan.
const MaxSharedConcurrent = 10000

// validateLimits checks the keys of the model's limits.
func (m *ModelConfig) validateLimits(bad func(key, format string, args ...any)) {
	switch m.LimitsScope {
	case LimitsReplica:
	case LimitsShared:
		if m.MaxConcurrent > MaxSharedConcurrent {
			bad("model.max_concurrent", "must be at most %d with limits_scope shared, got %d", MaxSharedConcurrent, m.MaxConcurrent)
		}
	default:
		bad("model.limits_scope", "must be %s or %s, got %q", LimitsReplica, LimitsShared, m.LimitsScope)
	}
	if m.RequestsPerMinute < 0 {
		bad("model.requests_per_minute", "must not be negative, got %d", m.RequestsPerMinute)
	}
	if m.TokensPerMinute < 0 {
		bad("model.tokens_per_minute", "must not be negative, got %d", m.TokensPerMinute)
	}
}
