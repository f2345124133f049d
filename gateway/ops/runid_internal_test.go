package ops

import (
	"encoding/hex"
	"testing"
	"time"
)

// TestRunIDsSortByTime: run ids made later sort after earlier ones (the
// indexes on run ids grow at their end), and ids of one millisecond
// still differ (80 random bits).
func TestRunIDsSortByTime(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	prev := newRunID(t0)
	seen := map[string]bool{prev: true}
	for i := 1; i <= 1000; i++ {
		id := newRunID(t0.Add(time.Duration(i) * time.Millisecond))
		if b, err := hex.DecodeString(id); err != nil || len(b) != 16 {
			t.Fatalf("run id %q is not 128 bits in hex", id)
		}
		if id <= prev {
			t.Fatalf("run id %q made after %q sorts before it", id, prev)
		}
		same := newRunID(t0.Add(time.Duration(i) * time.Millisecond))
		if seen[id] || seen[same] || same == id {
			t.Fatalf("run id repeated: %q %q", id, same)
		}
		seen[id], seen[same], prev = true, true, id
	}
}
