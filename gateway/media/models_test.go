package media

import (
	"net/http"
	"testing"
)

// TestVoiceFileName: transcription endpoints pick the decoder by the
// extension, so it comes from the bytes, not the platform's word.
func TestVoiceFileName(t *testing.T) {
	for _, c := range []struct {
		audio []byte
		want  string
	}{
		{[]byte("#!AMR\n\x3c\x48"), "voice.amr"},
		{[]byte("#!AMR-WB\n\x04"), "voice.awb"},
		{[]byte("#!SILK_V3\x00"), "voice.silk"},
		{append([]byte("OggS\x00\x02"), make([]byte, 30)...), "voice.ogg"},
		{append([]byte("ID3\x03\x00"), make([]byte, 30)...), "voice.mp3"},
		{append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), make([]byte, 30)...), "voice.wav"},
		{[]byte("something else"), "voice.ogg"},
	} {
		if got := voiceFileName(c.audio, http.DetectContentType(c.audio)); got != c.want {
			t.Errorf("%q: %s, want %s", c.audio[:6], got, c.want)
		}
	}
}
