package feishu

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
	"time"
)

// fragmentOp is one fragment a fuzz script sends, from four bytes: which
// payload (and how long to wait before it), its sum and seq headers, and
// its size.
func fragmentOp(b []byte) (f Frame, wait time.Duration) {
	sums := []string{"", "0", "1", "2", "3", "4", "-1", "x", "4611686018427387904", strconv.Itoa(maxFragments), strconv.Itoa(maxFragments + 1)}
	sum := sums[int(b[1])%len(sums)]
	seq := strconv.Itoa(int(b[2]) % 6)
	if b[2] == 0xff {
		seq = ""
	}
	// Sizes reach past maxPayloadBytes in a few fragments; each fragment is
	// filled with a byte naming its seq, so that a reassembled payload
	// shows its order.
	size := int(b[3]) * 5 << 10
	fill := byte('a')
	if n, err := strconv.Atoi(seq); err == nil {
		fill += byte(n)
	}
	f = Frame{Method: FrameData, Headers: []Header{
		{HdrType, TypeEvent},
		{HdrMessageID, "m" + strconv.Itoa(int(b[0]%(maxPartials+2)))},
		{HdrSum, sum},
		{HdrSeq, seq},
	}, Payload: bytes.Repeat([]byte{fill}, size)}
	return f, time.Duration(b[0]>>4) * time.Second
}

// FuzzFragments feeds fragment sequences to reassembly: no panic; what it
// keeps stays within maxPartials payloads of maxPayloadBytes, each within
// maxFragments slots; a reassembled payload is within maxPayloadBytes and
// its fragments are in seq order; a refusal wraps ErrMalformed.
func FuzzFragments(f *testing.F) {
	f.Add([]byte{0, 3, 0, 1, 0, 3, 1, 1, 0, 3, 2, 1})                                                                                     // three fragments in order
	f.Add([]byte{1, 4, 3, 1, 1, 4, 0, 1, 1, 4, 2, 1, 1, 4, 1, 1, 1, 4, 1, 1})                                                             // out of order, one repeated
	f.Add([]byte{2, 8, 0, 1})                                                                                                             // sum=4611686018427387904
	f.Add([]byte{3, 3, 0, 120, 3, 3, 1, 120, 3, 3, 2, 120})                                                                               // over maxPayloadBytes
	f.Add([]byte{0, 3, 0, 1, 1, 3, 0, 1, 2, 3, 0, 1, 3, 3, 0, 1, 4, 3, 0, 1, 5, 3, 0, 1, 6, 3, 0, 1, 7, 3, 0, 1, 8, 3, 0, 1, 9, 3, 0, 1}) // too many partials
	f.Add([]byte{0, 3, 0, 1, 0xf0, 3, 1, 1})                                                                                              // the second fragment after the TTL
	f.Fuzz(func(t *testing.T, script []byte) {
		fr := newFragments(defaultWSTimings.fragmentTTL)
		now := time.Unix(1_700_000_000, 0)
		for len(script) >= 4 {
			frame, wait := fragmentOp(script[:4])
			script = script[4:]
			now = now.Add(wait)
			payload, complete, err := fr.add(frame, now)
			switch {
			case err != nil:
				if !errors.Is(err, ErrMalformed) || complete || payload != nil {
					t.Fatalf("refusal %v with payload %d bytes, complete %v", err, len(payload), complete)
				}
			case complete:
				if len(payload) > maxPayloadBytes {
					t.Fatalf("reassembled %d bytes", len(payload))
				}
				for i := 1; i < len(payload); i++ {
					if payload[i] < payload[i-1] {
						t.Fatalf("fragments out of order at byte %d", i)
					}
				}
			case payload != nil:
				t.Fatalf("incomplete with %d bytes", len(payload))
			}
			if len(fr.m) > maxPartials {
				t.Fatalf("%d partial payloads kept", len(fr.m))
			}
			for id, p := range fr.m {
				held := 0
				for _, part := range p.parts {
					held += len(part)
				}
				if len(p.parts) > maxFragments || held != p.bytes || held > maxPayloadBytes || (p.refused && held != 0) {
					t.Fatalf("partial %s: %d slots, %d bytes held, %d counted, refused %v", id, len(p.parts), held, p.bytes, p.refused)
				}
			}
		}
	})
}

func TestFragmentsExpire(t *testing.T) {
	fr := newFragments(10 * time.Second)
	now := time.Unix(1_700_000_000, 0)
	first := Frame{Headers: []Header{{HdrMessageID, "m"}, {HdrSum, "2"}, {HdrSeq, "0"}}, Payload: []byte("a")}
	if _, complete, err := fr.add(first, now); complete || err != nil {
		t.Fatalf("complete %v, err %v", complete, err)
	}
	// Past the TTL the first fragment is gone: the second alone does not
	// complete anything, and waits in its place.
	second := Frame{Headers: []Header{{HdrMessageID, "m"}, {HdrSum, "2"}, {HdrSeq, "1"}}, Payload: []byte("b")}
	if _, complete, err := fr.add(second, now.Add(11*time.Second)); complete || err != nil {
		t.Fatalf("complete %v, err %v", complete, err)
	}
	if got, complete, err := fr.add(first, now.Add(12*time.Second)); !complete || err != nil || string(got) != "ab" {
		t.Fatalf("got %q, complete %v, err %v", got, complete, err)
	}
	if len(fr.m) != 0 {
		t.Fatalf("%d partials kept after completion", len(fr.m))
	}
}
