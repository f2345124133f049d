package feishu

import (
	"fmt"
	"strconv"
	"time"
)

// Bounds on reassembling payloads split over frames. Headers sum and seq
// come from the peer: nothing is allocated from them before they are
// checked against these.
const (
	// maxFragments caps a payload's sum. Feishu splits only payloads too
	// big for one frame, and events are a few KiB, so a real sum is 1 or
	// a handful; 256 slots (6 KiB of slot table) still carry maxPayloadBytes
	// in 4 KiB fragments.
	maxFragments = 256
	// maxPayloadBytes caps a payload, whole or reassembled: an event is the
	// same JSON on the long connection as in an HTTP body, bounded alike.
	maxPayloadBytes = maxEventBytes
	// maxPartials caps the payloads being reassembled at once on one
	// connection, so that what fragments hold is at most maxPartials ×
	// maxPayloadBytes (8 MiB). Feishu has a few events in flight per
	// client; a fragment of one more payload is refused and Feishu
	// delivers that event again.
	maxPartials = 8
)

// fragments reassembles payloads split over frames (headers sum/seq,
// shared message_id). Only the reading goroutine uses it. A payload not
// complete within ttl is dropped: Feishu has long given up on its ack
// (CallbackDeadline) and delivers the event again.
type fragments struct {
	m   map[string]*partial
	ttl time.Duration
}

func newFragments(ttl time.Duration) *fragments {
	return &fragments{m: map[string]*partial{}, ttl: ttl}
}

type partial struct {
	parts [][]byte
	got   int // fragments received
	bytes int // their total size
	first time.Time
	// refused: one fragment was refused; the others are dropped silently
	// until ttl, so that a payload counts as one refusal.
	refused bool
}

// add takes one data frame. It returns the whole payload once its last
// missing fragment arrived (complete), nothing while fragments are
// missing or for a repeated fragment, and an error wrapping ErrMalformed
// for a frame over the bounds or with headers that contradict each other.
func (fr *fragments) add(f Frame, now time.Time) (payload []byte, complete bool, err error) {
	sum, seq, err := fragmentHeaders(f)
	if err != nil {
		return nil, false, err
	}
	if len(f.Payload) > maxPayloadBytes {
		return nil, false, fmt.Errorf("%w: fragment of %d bytes, over %d", ErrMalformed, len(f.Payload), maxPayloadBytes)
	}
	if sum == 1 {
		return f.Payload, true, nil
	}
	for id, p := range fr.m {
		if now.Sub(p.first) > fr.ttl {
			delete(fr.m, id)
		}
	}
	id := f.Get(HdrMessageID)
	if id == "" {
		return nil, false, fmt.Errorf("%w: fragment %d/%d without %s", ErrMalformed, seq, sum, HdrMessageID)
	}
	p, ok := fr.m[id]
	switch {
	case ok && p.refused:
		return nil, false, nil
	case ok && len(p.parts) != sum:
		err := fmt.Errorf("%w: fragment says sum %d, an earlier one %d", ErrMalformed, sum, len(p.parts))
		p.refuse()
		return nil, false, err
	case ok && p.parts[seq] != nil:
		return nil, false, nil // a repeat
	case !ok && len(fr.m) >= maxPartials:
		return nil, false, fmt.Errorf("%w: %d payloads already being reassembled", ErrMalformed, len(fr.m))
	case !ok:
		p = &partial{parts: make([][]byte, sum), first: now}
		fr.m[id] = p
	}
	if p.bytes+len(f.Payload) > maxPayloadBytes {
		p.refuse()
		return nil, false, fmt.Errorf("%w: payload over %d bytes", ErrMalformed, maxPayloadBytes)
	}
	p.parts[seq] = append([]byte{}, f.Payload...)
	p.got++
	p.bytes += len(f.Payload)
	if p.got < sum {
		return nil, false, nil
	}
	delete(fr.m, id)
	whole := make([]byte, 0, p.bytes)
	for _, part := range p.parts {
		whole = append(whole, part...)
	}
	return whole, true, nil
}

// refuse frees what p holds and keeps it as a tombstone until ttl.
func (p *partial) refuse() {
	p.parts, p.bytes, p.refused = nil, 0, true
}

// fragmentHeaders reads sum and seq. A sum absent, 0 or 1 is a whole
// payload (as the official SDK reads it) and its seq is not looked at;
// otherwise both must be numbers in range: a frame whose sum cannot be read
// is refused, not taken for a whole payload.
func fragmentHeaders(f Frame) (sum, seq int, err error) {
	header := func(key string, hi int) (int, error) {
		v := f.Get(key)
		if v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > hi {
			return 0, fmt.Errorf("%w: header %s=%.20q, want 0 to %d", ErrMalformed, key, v, hi)
		}
		return n, nil
	}
	if sum, err = header(HdrSum, maxFragments); err != nil || sum <= 1 {
		return 1, 0, err
	}
	if seq, err = header(HdrSeq, sum-1); err != nil {
		return 0, 0, err
	}
	return sum, seq, nil
}
