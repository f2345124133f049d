package aibot_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/aibot"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
)

// TestDecryptMediaMatchesTheOfficialSDK decrypts a vector that the
// official @wecom/aibot-node-sdk 1.0.7 decryptFile decrypts to the same
// bytes (testdata/aibot_media_vector.js made it; its padding, 28, is past
// the 16 a default AES unpadding allows).
func TestDecryptMediaMatchesTheOfficialSDK(t *testing.T) {
	raw, err := os.ReadFile("testdata/aibot_media_vector.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ AESKey, Ciphertext, Plaintext string }
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	key, _ := base64.StdEncoding.DecodeString(v.AESKey)
	data, _ := base64.StdEncoding.DecodeString(v.Ciphertext)
	want, _ := base64.StdEncoding.DecodeString(v.Plaintext)
	got, err := aibot.DecryptMedia(key, data)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("DecryptMedia = %q, %v; want %q", got, err, want)
	}
	if enc := wecomtest.EncryptBotFile(key, want); !bytes.Equal(enc, mustB64(t, v.Ciphertext)) {
		t.Errorf("the fake's encryption differs from the vector")
	}
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecryptMediaRefusesWhatDoesNotDecrypt(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	other := bytes.Repeat([]byte{8}, 32)
	enc := wecomtest.EncryptBotFile(key, []byte("工资条截图"))
	for name, data := range map[string][]byte{
		"wrong key": append([]byte{}, enc...),
		"truncated": enc[:len(enc)-5],
		"empty":     {},
	} {
		k := key
		if name == "wrong key" {
			k = other
		}
		if _, err := aibot.DecryptMedia(k, data); !errors.Is(err, channels.ErrMediaUndecryptable) {
			t.Errorf("%s: err %v, want ErrMediaUndecryptable", name, err)
		}
	}
}

// TestBotFetchesAndDecryptsMedia: the long connection's per-URL aeskey
// and the callback bot's EncodingAESKey both open a file; an expired URL,
// a wrong key and a file over the limit are refused, each with its own
// error.
func TestBotFetchesAndDecryptsMedia(t *testing.T) {
	files := wecomtest.NewBotFileServer(t)
	f := newCallbackBot(t)
	ctx := context.Background()
	png := []byte("\x89PNG\r\n\x1a\n pretend image bytes")
	fileKey := bytes.Repeat([]byte{0x42}, 32)
	botKey, _ := base64.StdEncoding.DecodeString(wecomtest.VectorKey + "=")

	ref := func(url, aesKey string) channels.MediaRef {
		r, _ := json.Marshal(map[string]string{"url": url, "aeskey": aesKey})
		return channels.MediaRef{Kind: channels.MediaImage, Ref: r}
	}
	withKey := files.Add(png, fileKey, "报错 截图.png")
	att, err := f.ch.FetchMedia(ctx, botName, ref(withKey, wecomtest.BotFileKey(fileKey)), 1<<20)
	if err != nil || !bytes.Equal(att.Data, png) || att.Name != "报错 截图.png" {
		t.Fatalf("per-URL key: %q %q %v", att.Data, att.Name, err)
	}
	byBotKey := files.Add(png, botKey, "")
	if att, err := f.ch.FetchMedia(ctx, botName, ref(byBotKey, ""), 1<<20); err != nil || !bytes.Equal(att.Data, png) {
		t.Fatalf("EncodingAESKey: %q %v", att.Data, err)
	}

	files.Expire(withKey)
	cases := []struct {
		name string
		ref  channels.MediaRef
		max  int64
		want error
	}{
		{"expired", ref(withKey, wecomtest.BotFileKey(fileKey)), 1 << 20, channels.ErrMediaExpired},
		{"wrong key", ref(byBotKey, wecomtest.BotFileKey(fileKey)), 1 << 20, channels.ErrMediaUndecryptable},
		{"bad aeskey", ref(byBotKey, "bm90IDMyIGJ5dGVz"), 1 << 20, channels.ErrMediaUndecryptable},
		{"not whole blocks", ref(files.AddRaw([]byte("plain text, not encrypted")), ""), 1 << 20, channels.ErrMediaUndecryptable},
		{"too large", ref(files.Add(bytes.Repeat([]byte("a"), 4096), fileKey, ""), wecomtest.BotFileKey(fileKey)), 1024, channels.ErrMediaTooLarge},
		{"not http", ref("file:///etc/passwd", ""), 1 << 20, channels.ErrMediaRefused},
	}
	for _, c := range cases {
		if _, err := f.ch.FetchMedia(ctx, botName, c.ref, c.max); !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := f.ch.FetchMedia(ctx, "no-such-bot", ref(byBotKey, ""), 1<<20); !errors.Is(err, channels.ErrMediaRefused) {
		t.Errorf("unknown account: %v", err)
	}
}

// TestBotQuoteBecomesContext: a quoted message reaches the sink as a
// Quote with its text.
func TestBotQuoteBecomesContext(t *testing.T) {
	f := newCallbackBot(t)
	plain := f.single("m-q").Text("这个怎么处理？")
	var v map[string]any
	_ = json.Unmarshal(plain, &v)
	v["quote"] = map[string]any{"msgtype": "text", "text": map[string]any{"content": "VPN 报错 809"}}
	plain, _ = json.Marshal(v)
	f.post(t, plain)
	got := f.sink.Accepted()
	in := got[len(got)-1]
	if in.Quote == nil || in.Quote.Text != "VPN 报错 809" || !strings.Contains(in.Text, "这个怎么处理") {
		t.Fatalf("Inbound %+v quote %+v, want the quote as context", in, in.Quote)
	}
}

func FuzzDecryptMedia(f *testing.F) {
	key := bytes.Repeat([]byte{7}, 32)
	f.Add(wecomtest.EncryptBotFile(key, []byte("seed")))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0}, 48))
	f.Fuzz(func(t *testing.T, data []byte) {
		plain, err := aibot.DecryptMedia(key, append([]byte{}, data...))
		if err == nil && len(plain) >= len(data) {
			t.Fatalf("decrypted %d bytes into %d: padding not removed", len(data), len(plain))
		}
	})
}
