package memory

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// reals is a real[] in Postgres' binary format: dims dimensions of the
// given sizes, element oid, elements as (length, bits) with -1 a NULL.
func reals(oid uint32, sizes []uint32, elems ...any) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(sizes)))
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, oid)
	for _, n := range sizes {
		b = binary.BigEndian.AppendUint32(b, n)
		b = binary.BigEndian.AppendUint32(b, 1)
	}
	for _, e := range elems {
		switch e := e.(type) {
		case float32:
			b = binary.BigEndian.AppendUint32(b, 4)
			b = binary.BigEndian.AppendUint32(b, math.Float32bits(e))
		case nil:
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1: NULL
			b = binary.BigEndian.AppendUint32(b, 0)              // keep the stride: still refused
		}
	}
	return b
}

func TestDecodeReals(t *testing.T) {
	t.Parallel()
	v, err := decodeReals(reals(float4OID, []uint32{3}, float32(1), float32(-0.5), float32(2.25)))
	if err != nil || len(v) != 3 || v[0] != 1 || v[1] != -0.5 || v[2] != 2.25 {
		t.Fatalf("decode = %v, %v", v, err)
	}
	if v, err := decodeReals(reals(float4OID, nil)); err != nil || len(v) != 0 {
		t.Errorf("empty array: %v, %v", v, err)
	}
	for name, b := range map[string][]byte{
		"Short":    {0, 0, 0, 1},
		"TwoDims":  reals(float4OID, []uint32{1, 1}, float32(1)),
		"Float8":   reals(701, []uint32{1}, float32(1)),
		"Null":     reals(float4OID, []uint32{2}, float32(1), nil),
		"Missing":  reals(float4OID, []uint32{3}, float32(1), float32(2)),
		"Trailing": append(reals(float4OID, []uint32{1}, float32(1)), 0),
		"TooMany":  reals(float4OID, []uint32{MaxDims + 1}),
	} {
		if v, err := decodeReals(b); err == nil || !strings.HasPrefix(err.Error(), "embedding") {
			t.Errorf("%s: %v, %v; want an error", name, v, err)
		}
	}
}
