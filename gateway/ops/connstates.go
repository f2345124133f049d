package ops

import (
	"maps"
	"sync"
)

// Connection states /readyz reports, per channel/account.
const (
	ConnRunning  = "running"  // a session is up (or dialling)
	ConnRetrying = "retrying" // the last session failed; the next dials after the backoff
	ConnHolding  = "holding"  // one-per-bot connection, held by this replica
	ConnStandby  = "standby"  // one-per-bot connection, held elsewhere or waiting for the lease
)

// ConnStates are the long connections' states on one replica, set by the
// gateway and read by /readyz.
type ConnStates struct {
	mu sync.Mutex
	m  map[string]string // "channel/account" → state
}

// Set records the state of channel/account's connection.
func (s *ConnStates) Set(channel, account, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[channel+"/"+account] = state
}

// Snapshot is a copy of every state.
func (s *ConnStates) Snapshot() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.m)
}
