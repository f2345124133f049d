package chantest

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"
)

// Clock is a settable clock for the code under test (channels.Env.Now,
// gateway.Deps.Now), so deadlines and deliveries hours apart take no time.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// LogBuffer is a log sink safe for concurrent writes, for tests that read
// what was logged.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *LogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *LogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ReportPercentiles reports the p50 and p99 of lat as benchmark metrics
// in milliseconds, named p50-<unit> and p99-<unit>. It sorts lat.
func ReportPercentiles(b *testing.B, lat []time.Duration, unit string) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-"+unit)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-"+unit)
}
