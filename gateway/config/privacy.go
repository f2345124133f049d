package config

import (
	"time"
)

// PrivacyConfig is how long Hermes keeps message content (privacy:).
type PrivacyConfig struct {
	// Retention is how long the content of messages is kept after they
	// arrived, default 90 days (2160h), at least 24h: the text of
	// inbound messages and their attachments' descriptions, the
	// conversation history, run traces (replies, tool arguments and
	// results), the outbox's reply texts, drafts and archived
	// observations. A periodic job (once across replicas, in batches of
	// RetentionBatch rows, each its own short transaction) deletes the
	// history, replies, drafts and archive rows past it and empties the
	// content of inbound messages and runs, whose rows stay for the
	// console's counts (times, channels, stop reasons, tokens). Memories
	// (memory.retention) and attachments' bytes (media.retention) have
	// retentions of their own.
	Retention time.Duration `yaml:"retention"`
	// RetentionBatch is how many rows one transaction of the retention job
	// changes, default 500.
	RetentionBatch int `yaml:"retention_batch"`
}

const (
	defaultPrivacyRetention      = 90 * 24 * time.Hour
	minPrivacyRetention          = 24 * time.Hour
	defaultPrivacyRetentionBatch = 500
)

func (p *PrivacyConfig) applyDefaults() {
	positive(&p.Retention, defaultPrivacyRetention)
	positive(&p.RetentionBatch, defaultPrivacyRetentionBatch)
}

func (p *PrivacyConfig) validate(bad func(key, format string, args ...any)) {
	if p.Retention < minPrivacyRetention {
		bad("privacy.retention", "must be at least %s (a message is answered and delivered first), got %s", minPrivacyRetention, p.Retention)
	}
}
