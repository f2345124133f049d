// Package mediatest holds what the media tests, benchmarks and the demo
// share: a PDF written by hand, and what reading an attachment costs
// (make bench).
package mediatest

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// PeakHeap runs f and returns the most heap memory it held above what was
// in use before it: "/memory/classes/heap/objects:bytes" (live objects
// plus garbage not yet swept, so what the process really holds, GC pacing
// included) sampled every 100 µs, minus its value after a GC before f.
func PeakHeap(f func()) uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	metrics.Read(s)
	base := s[0].Value.Uint64()
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		peak := base
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	return <-done - base
}
