package config

import "time"

// GroupCommitConfig is how the ack path shares transactions
// (gateway/groupcommit): the callbacks and long-connection frames
// arriving together are stored, with their jobs, in one transaction and
// one commit, and each is acknowledged once that commit is durable.
type GroupCommitConfig struct {
	// MaxWait is how long a batch waits for more messages after its
	// first. Default 0: a batch is what arrived while the previous ones
	// were being written, so a lone message waits for nothing.
	MaxWait time.Duration `yaml:"max_wait"`
	// MaxBatch is the most messages in one transaction. Default 64.
	MaxBatch int `yaml:"max_batch"`
	// Writers is the most batches written at once, each on one of
	// database.max_conns. Default 4.
	Writers int `yaml:"writers"`
}

// Defaults of database.group_commit.
const (
	defaultGroupCommitBatch   = 64
	defaultGroupCommitWriters = 4
	maxGroupCommitWait        = 100 * time.Millisecond // the platforms wait 3-5 s for the whole ack
	maxGroupCommitBatch       = 1000
)

func (c *GroupCommitConfig) applyDefaults() {
	positive(&c.MaxBatch, defaultGroupCommitBatch)
	positive(&c.Writers, defaultGroupCommitWriters)
}

func (c *GroupCommitConfig) validate(maxConns int32, bad func(key, format string, args ...any)) {
	if c.MaxWait < 0 || c.MaxWait > maxGroupCommitWait {
		bad("database.group_commit.max_wait", "must be between 0 and %s, got %s", maxGroupCommitWait, c.MaxWait)
	}
	if c.MaxBatch < 0 || c.MaxBatch > maxGroupCommitBatch {
		bad("database.group_commit.max_batch", "must be between 1 and %d, got %d", maxGroupCommitBatch, c.MaxBatch)
	}
	if c.Writers < 0 || int32(c.Writers) > maxConns/2 {
		bad("database.group_commit.writers", "must be between 1 and half of database.max_conns (%d), got %d", maxConns/2, c.Writers)
	}
}
