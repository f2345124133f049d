package feishu_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/hermes-gw/hermes/channels/feishu"
)

func TestFrameRoundTrip(t *testing.T) {
	f := feishu.Frame{
		SeqID: 12, LogID: 34, Service: 7, Method: feishu.FrameData,
		Headers: []feishu.Header{{Key: "type", Value: "event"}, {Key: "sum", Value: "2"}},
		Payload: []byte(`{"schema":"2.0"}`), LogIDNew: "log-1",
	}
	got, err := feishu.UnmarshalFrame(f.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, f) {
		t.Fatalf("got %+v, want %+v", got, f)
	}
	if got.Get("sum") != "2" || got.GetInt("sum") != 2 || got.Get("none") != "" {
		t.Fatal("headers not read")
	}
}

// The required fields are on the wire even when zero: proto2 peers refuse
// a frame without them.
func TestFrameRequiredFieldsAlwaysWritten(t *testing.T) {
	ping := feishu.Frame{Method: feishu.FrameControl}
	want := []byte{0x08, 0x00, 0x10, 0x00, 0x18, 0x00, 0x20, 0x00}
	if got := ping.Marshal(); !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
}

func TestFrameRejectsTruncated(t *testing.T) {
	b := (&feishu.Frame{Payload: []byte("hello")}).Marshal()
	if _, err := feishu.UnmarshalFrame(b[:len(b)-2]); err == nil {
		t.Fatal("truncated frame decoded")
	}
}

// FuzzUnmarshalFrame: any bytes from the socket decode without a panic;
// a frame that decodes holds no more than its bytes (at most MaxHeaders
// headers) and encodes back to a frame that decodes the same.
func FuzzUnmarshalFrame(f *testing.F) {
	f.Add((&feishu.Frame{Method: feishu.FrameControl, Headers: []feishu.Header{{Key: "type", Value: "ping"}}}).Marshal())
	f.Add((&feishu.Frame{
		SeqID: 1, LogID: 2, Service: 7, Method: feishu.FrameData,
		Headers: []feishu.Header{{Key: "type", Value: "event"}, {Key: "message_id", Value: "m"}, {Key: "sum", Value: "4611686018427387904"}, {Key: "seq", Value: "0"}},
		Payload: []byte(`{"schema":"2.0"}`), PayloadType: "json", LogIDNew: "log",
	}).Marshal())
	f.Add([]byte{0x2a, 0x80, 0x80, 0x80, 0x80, 0x10}) // a header claiming 4 GiB
	f.Add([]byte{0x0d, 0x01, 0x02, 0x03, 0x04})       // a fixed32 field, skipped
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := feishu.UnmarshalFrame(b)
		if err != nil {
			if !errors.Is(err, feishu.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(fr.Headers) > feishu.MaxHeaders {
			t.Fatalf("%d headers", len(fr.Headers))
		}
		size := len(fr.Payload) + len(fr.PayloadEncoding) + len(fr.PayloadType) + len(fr.LogIDNew)
		for _, h := range fr.Headers {
			size += len(h.Key) + len(h.Value)
		}
		if size > len(b) {
			t.Fatalf("%d bytes decoded to %d", len(b), size)
		}
		again, err := feishu.UnmarshalFrame(fr.Marshal())
		if err != nil {
			t.Fatalf("re-encoded frame does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, fr) {
			t.Fatalf("round trip: got %+v, want %+v", again, fr)
		}
	})
}
