package wecom_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom"
)

// The official WeCom vector (protocols.md).
const (
	vecToken     = "QDG6eK"
	vecKey       = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	vecCorpID    = "wx5823bf96d3bd56c7"
	vecTimestamp = "1409659589"
	vecNonce     = "263014780"
	vecEchostr   = "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ=="
	vecSignature = "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3"
	vecEchoPlain = "1616140317555161061"
	vecHelloEnc  = "2JaQ0H0H/TuqGM/rDRTva4KCBErkgircbFwsPJSPsxzi7ka4YRr9o885RlUBNjmEP+IcHF9gBW7EGFNZAGN0AA=="
)

func mustCrypto(t testing.TB, token, key, receiveID string) *wecom.Crypto {
	t.Helper()
	c, err := wecom.NewCrypto(token, key, receiveID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCrypto_OfficialVectors(t *testing.T) {
	c := mustCrypto(t, vecToken, vecKey, vecCorpID)

	t.Run("Signature", func(t *testing.T) {
		if got := c.Signature(vecTimestamp, vecNonce, vecEchostr); got != vecSignature {
			t.Fatalf("Signature = %s, want %s", got, vecSignature)
		}
		if !c.VerifySignature(vecSignature, vecTimestamp, vecNonce, vecEchostr) {
			t.Fatal("VerifySignature rejected the official signature")
		}
	})
	t.Run("DecryptEchostr", func(t *testing.T) {
		got, err := c.Decrypt(vecEchostr)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != vecEchoPlain {
			t.Fatalf("Decrypt = %q, want %q", got, vecEchoPlain)
		}
	})
	t.Run("DeterministicEncrypt", func(t *testing.T) {
		got, err := c.Encrypt([]byte("hello"), bytes.Repeat([]byte("a"), 16))
		if err != nil {
			t.Fatal(err)
		}
		if got != vecHelloEnc {
			t.Fatalf("Encrypt = %s, want %s", got, vecHelloEnc)
		}
	})
	t.Run("DecryptDeterministic", func(t *testing.T) {
		got, err := c.Decrypt(vecHelloEnc)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "hello" {
			t.Fatalf("Decrypt = %q, want hello", got)
		}
	})
}

func TestApp_VerifyURL_OfficialVector(t *testing.T) {
	app := newVectorApp(t, time.Unix(1409659589, 0))
	q := url.Values{}
	q.Set("msg_signature", vecSignature)
	q.Set("timestamp", vecTimestamp)
	q.Set("nonce", vecNonce)
	q.Set("echostr", vecEchostr)
	got, err := app.VerifyURL(q)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != vecEchoPlain {
		t.Fatalf("VerifyURL = %q, want %q (bare, no quotes or newline)", got, vecEchoPlain)
	}

	t.Run("ErrSignature", func(t *testing.T) {
		bad := cloneValues(q)
		bad.Set("msg_signature", "0"+vecSignature[1:])
		if _, err := app.VerifyURL(bad); !errors.Is(err, wecom.ErrSignature) {
			t.Fatalf("err = %v, want ErrSignature", err)
		}
		bad.Del("msg_signature")
		if _, err := app.VerifyURL(bad); !errors.Is(err, wecom.ErrSignature) {
			t.Fatalf("missing signature: err = %v, want ErrSignature", err)
		}
	})
	t.Run("ErrStale", func(t *testing.T) {
		late := newVectorApp(t, time.Unix(1409659589, 0).Add(5*time.Minute+time.Second))
		if _, err := late.VerifyURL(q); !errors.Is(err, wecom.ErrStale) {
			t.Fatalf("err = %v, want ErrStale", err)
		}
		early := newVectorApp(t, time.Unix(1409659589, 0).Add(-5*time.Minute-time.Second))
		if _, err := early.VerifyURL(q); !errors.Is(err, wecom.ErrStale) {
			t.Fatalf("err = %v, want ErrStale", err)
		}
		edge := newVectorApp(t, time.Unix(1409659589, 0).Add(5*time.Minute))
		if _, err := edge.VerifyURL(q); err != nil {
			t.Fatalf("at the window's edge: %v", err)
		}
	})
}

// The DingTalk event-subscription vector: another receiveid. (Its padding is
// 27 bytes, to a 32-byte block; 16-byte padding is tested below.)
func TestCrypto_DingTalkVector(t *testing.T) {
	const (
		encrypt = "X1VSe9cTJUMZu60d3kyLYTrBq5578ZRJtteU94wG0Q4Uk6E/wQYeJRIC0/UFW5Wkya1Ihz9oXAdLlyC9TRaqsQ=="
		sig     = "f36f4ba5337d426c7d4bca0dbcb06b3ddc1388fc"
	)
	c := mustCrypto(t, "tokenxxxx", "o1w0aum42yaptlz8alnhwikjd3jenzt9cb9wmzptgus", "dingxxxxxx")
	if !c.VerifySignature(sig, "1605695694141", "WelUQl6bCqcBa2fM", encrypt) {
		t.Fatal("VerifySignature rejected the DingTalk vector")
	}
	got, err := c.Decrypt(encrypt)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "success" {
		t.Fatalf("Decrypt = %q, want success", got)
	}
}

// DingTalk's Go sample pads to 16-byte blocks, leaving ciphertexts that are
// not a multiple of 32 bytes, which silenceper's DecryptMsg rejects.
func TestCrypto_SixteenBytePadding(t *testing.T) {
	const receiveID = "dingxxxxxx"
	key, _ := base64.StdEncoding.DecodeString(vecKey + "=")
	c := mustCrypto(t, vecToken, vecKey, receiveID)
	for _, msg := range []string{"success", "ok" /* a whole block of padding */} {
		p := plainFor(msg, receiveID)
		enc := rawEncrypt(key, withPad(p, 16-len(p)%16))
		raw, _ := base64.StdEncoding.DecodeString(enc)
		t.Logf("%q: %d-byte plaintext, %d-byte ciphertext, pad %d", msg, len(p), len(raw), len(raw)-len(p))
		got, err := c.Decrypt(enc)
		if err != nil {
			t.Fatalf("Decrypt(%q padded to 16): %v", msg, err)
		}
		if string(got) != msg {
			t.Fatalf("Decrypt = %q, want %q", got, msg)
		}
	}
}

// An AI bot's receiveid is the empty string.
func TestCrypto_EmptyReceiveIDRoundTrip(t *testing.T) {
	c := mustCrypto(t, vecToken, vecKey, "")
	for _, msg := range []string{"", "x", `{"msgid":"1","msgtype":"text","text":{"content":"你好"}}`, string(bytes.Repeat([]byte("y"), 12))} {
		enc, err := c.Encrypt([]byte(msg), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decrypt(enc)
		if err != nil {
			t.Fatalf("Decrypt(%q): %v", msg, err)
		}
		if string(got) != msg {
			t.Fatalf("round trip = %q, want %q", got, msg)
		}
	}
	// A corp's message must not pass as the bot's, nor the reverse.
	corp := mustCrypto(t, vecToken, vecKey, vecCorpID)
	if _, err := c.Decrypt(vecHelloEnc); !errors.Is(err, wecom.ErrDecrypt) {
		t.Fatalf("corp message with empty receiveid: err = %v, want ErrDecrypt", err)
	}
	enc, _ := c.Encrypt([]byte("hi"), nil)
	if _, err := corp.Decrypt(enc); !errors.Is(err, wecom.ErrDecrypt) {
		t.Fatalf("bot message with corp receiveid: err = %v, want ErrDecrypt", err)
	}
}

func TestCrypto_Decrypt_Errors(t *testing.T) {
	c := mustCrypto(t, vecToken, vecKey, vecCorpID)
	key, _ := base64.StdEncoding.DecodeString(vecKey + "=")

	tests := map[string]string{
		"WrongReceiveID": mustEncrypt(t, mustCrypto(t, vecToken, vecKey, "wwotherCorp"), "hello"),
		"NotBase64":      "not base64 !!",
		"Empty":          "",
		"PartialBlock":   base64.StdEncoding.EncodeToString(make([]byte, 20)),
		"PadZero":        rawEncrypt(key, withPad(plainFor("hello", vecCorpID), 0)),
		"PadTooLarge":    rawEncrypt(key, withPad(plainFor("hello", vecCorpID), 33)),
		"PadInconsistent": rawEncrypt(key, func() []byte {
			p := withPad(plainFor("hello", vecCorpID), 5)
			p[len(p)-3] = 4
			return p
		}()),
		"LengthOverflow": rawEncrypt(key, func() []byte {
			p := plainFor("hello", vecCorpID)
			binary.BigEndian.PutUint32(p[16:20], 0xFFFFFFF0)
			return validPad(p)
		}()),
		"TooShort": rawEncrypt(key, validPad([]byte("short"))),
	}
	// Control: the same construction with nothing wrong decrypts, so each
	// case below fails for its own defect.
	if got, err := c.Decrypt(rawEncrypt(key, validPad(plainFor("hello", vecCorpID)))); err != nil || string(got) != "hello" {
		t.Fatalf("control: %q, %v", got, err)
	}
	for name, enc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := c.Decrypt(enc); !errors.Is(err, wecom.ErrDecrypt) {
				t.Fatalf("err = %v, want ErrDecrypt", err)
			}
		})
	}
}

func TestCrypto_ForgedSignature(t *testing.T) {
	c := mustCrypto(t, vecToken, vecKey, vecCorpID)
	other := mustCrypto(t, "otherToken", vecKey, vecCorpID)
	forged := other.Signature(vecTimestamp, vecNonce, vecEchostr)
	for _, sig := range []string{forged, "", vecSignature[:39], vecSignature + "0"} {
		if c.VerifySignature(sig, vecTimestamp, vecNonce, vecEchostr) {
			t.Fatalf("VerifySignature accepted %q", sig)
		}
	}
	// Any changed input invalidates the signature.
	if c.VerifySignature(vecSignature, vecTimestamp, vecNonce+"1", vecEchostr) {
		t.Fatal("VerifySignature accepted a changed nonce")
	}
}

func TestNewCrypto_Errors(t *testing.T) {
	for name, args := range map[string][2]string{
		"EmptyToken": {"", vecKey},
		"ShortKey":   {vecToken, vecKey[:42]},
		"NotBase64":  {vecToken, "!" + vecKey[1:]},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := wecom.NewCrypto(args[0], args[1], vecCorpID); err == nil {
				t.Fatal("NewCrypto accepted bad input")
			}
		})
	}
}

func FuzzDecrypt(f *testing.F) {
	f.Add(vecEchostr)
	f.Add(vecHelloEnc)
	f.Add("")
	f.Add("AAAAAAAAAAAAAAAAAAAAAA==")
	c := mustCrypto(f, vecToken, vecKey, vecCorpID)
	f.Fuzz(func(t *testing.T, enc string) {
		msg, err := c.Decrypt(enc)
		if err != nil {
			if !errors.Is(err, wecom.ErrDecrypt) {
				t.Fatalf("error does not wrap ErrDecrypt: %v", err)
			}
			return
		}
		// Whatever decrypts must survive a round trip.
		again, err := c.Encrypt(msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		back, err := c.Decrypt(again)
		if err != nil || !bytes.Equal(back, msg) {
			t.Fatalf("round trip of %q: %q, %v", msg, back, err)
		}
	})
}

func FuzzEncryptRoundTrip(f *testing.F) {
	f.Add([]byte("hello"), "")
	f.Add([]byte{}, "wx5823bf96d3bd56c7")
	f.Fuzz(func(t *testing.T, msg []byte, receiveID string) {
		c := mustCrypto(t, vecToken, vecKey, receiveID)
		enc, err := c.Encrypt(msg, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Decrypt(enc)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round trip: %q, %v", got, err)
		}
	})
}

// plainFor is the unpadded plaintext WeCom encrypts.
func plainFor(msg, receiveID string) []byte {
	p := bytes.Repeat([]byte("r"), 16)
	p = binary.BigEndian.AppendUint32(p, uint32(len(msg)))
	p = append(p, msg...)
	return append(p, receiveID...)
}

// withPad appends pad copies of byte(pad), first inserting zero bytes so the
// result is whole AES blocks; with a bad pad value it builds bad padding.
func withPad(p []byte, pad int) []byte {
	for (len(p)+pad)%aes.BlockSize != 0 {
		p = append(p, 0)
	}
	return append(p, bytes.Repeat([]byte{byte(pad)}, pad)...)
}

// validPad pads p the way WeCom does, to 32-byte blocks.
func validPad(p []byte) []byte {
	return withPad(p, 32-len(p)%32)
}

// rawEncrypt encrypts whole blocks with WeCom's key and IV and no padding of
// its own, so tests can build ciphertexts Encrypt would never produce.
func rawEncrypt(key, plain []byte) string {
	block, _ := aes.NewCipher(key)
	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, key[:16]).CryptBlocks(out, plain)
	return base64.StdEncoding.EncodeToString(out)
}

func mustEncrypt(t *testing.T, c *wecom.Crypto, msg string) string {
	t.Helper()
	enc, err := c.Encrypt([]byte(msg), nil)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
