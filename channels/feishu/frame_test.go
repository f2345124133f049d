package feishu_test

import (
	"bytes"
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
