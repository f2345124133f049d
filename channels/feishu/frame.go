package feishu

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Frame is one long-connection frame (the pbbp2.Frame protobuf of Feishu's
// SDKs, proto2). SeqID, LogID, Service and Method are required and always
// written, even when 0.
type Frame struct {
	SeqID           uint64
	LogID           uint64
	Service         int32
	Method          int32 // FrameControl or FrameData
	Headers         []Header
	PayloadEncoding string
	PayloadType     string
	Payload         []byte
	LogIDNew        string
}

// Header is one frame header.
type Header struct {
	Key, Value string
}

// Frame methods.
const (
	FrameControl int32 = 0 // ping, pong
	FrameData    int32 = 1 // event, card
)

// Header keys and frame types.
const (
	HdrType      = "type"       // "ping", "pong", "event", "card"
	HdrMessageID = "message_id" // fragments of one payload share it
	HdrSum       = "sum"        // number of fragments, 1 when not split
	HdrSeq       = "seq"        // fragment index from 0
	HdrTraceID   = "trace_id"
	HdrBizRT     = "biz_rt" // our handling time in ms, added to the ack
	TypePing     = "ping"
	TypePong     = "pong"
	TypeEvent    = "event"
)

// Get returns the value of header key, "" when absent.
func (f *Frame) Get(key string) string {
	for _, h := range f.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return ""
}

// GetInt returns header key as an int, 0 when absent or not a number.
func (f *Frame) GetInt(key string) int {
	n, _ := strconv.Atoi(f.Get(key))
	return n
}

// Marshal encodes the frame.
func (f *Frame) Marshal() []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, f.SeqID)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, f.LogID)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(f.Service)))
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(f.Method)))
	for _, h := range f.Headers {
		var hb []byte
		hb = protowire.AppendTag(hb, 1, protowire.BytesType)
		hb = protowire.AppendString(hb, h.Key)
		hb = protowire.AppendTag(hb, 2, protowire.BytesType)
		hb = protowire.AppendString(hb, h.Value)
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, hb)
	}
	for _, s := range []struct {
		num protowire.Number
		v   string
	}{{6, f.PayloadEncoding}, {7, f.PayloadType}} {
		if s.v != "" {
			b = protowire.AppendTag(b, s.num, protowire.BytesType)
			b = protowire.AppendString(b, s.v)
		}
	}
	if f.Payload != nil {
		b = protowire.AppendTag(b, 8, protowire.BytesType)
		b = protowire.AppendBytes(b, f.Payload)
	}
	if f.LogIDNew != "" {
		b = protowire.AppendTag(b, 9, protowire.BytesType)
		b = protowire.AppendString(b, f.LogIDNew)
	}
	return b
}

// maxHeaders caps a frame's headers: Feishu sends about six (type,
// message_id, sum, seq, trace_id, biz_rt), and a header costs two bytes on
// the wire but 32 in memory, so an uncapped frame of tiny headers would
// decode to sixteen times its size (and every Get would scan them all).
const maxHeaders = 64

// UnmarshalFrame decodes a frame; unknown fields are skipped.
//
// Errors wrap ErrMalformed.
func UnmarshalFrame(b []byte) (Frame, error) {
	var f Frame
	err := eachField(b, func(num protowire.Number, v uint64, bs []byte) error {
		switch num {
		case 1:
			f.SeqID = v
		case 2:
			f.LogID = v
		case 3:
			f.Service = int32(v)
		case 4:
			f.Method = int32(v)
		case 5:
			if len(f.Headers) == maxHeaders {
				return fmt.Errorf("over %d headers", maxHeaders)
			}
			var h Header
			err := eachField(bs, func(num protowire.Number, _ uint64, bs []byte) error {
				switch num {
				case 1:
					h.Key = string(bs)
				case 2:
					h.Value = string(bs)
				}
				return nil
			})
			f.Headers = append(f.Headers, h)
			return err
		case 6:
			f.PayloadEncoding = string(bs)
		case 7:
			f.PayloadType = string(bs)
		case 8:
			f.Payload = append([]byte(nil), bs...)
		case 9:
			f.LogIDNew = string(bs)
		}
		return nil
	})
	if err != nil {
		return Frame{}, fmt.Errorf("%w: frame: %w", ErrMalformed, err)
	}
	return f, nil
}

// eachField calls fn with every varint (v) and length-delimited (bs) field
// of a protobuf message; fields of other wire types are skipped.
func eachField(b []byte, fn func(num protowire.Number, v uint64, bs []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v uint64
		var bs []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			bs, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.VarintType && typ != protowire.BytesType {
			continue
		}
		if err := fn(num, v, bs); err != nil {
			return err
		}
	}
	return nil
}
