package wxbiz_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// vecHelloEnc is "hello" encrypted with the official WeCom vector's key
// (wecomtest.Vector*).
const vecHelloEnc = "2JaQ0H0H/TuqGM/rDRTva4KCBErkgircbFwsPJSPsxzi7ka4YRr9o885RlUBNjmEP+IcHF9gBW7EGFNZAGN0AA=="

func TestCrypto_OfficialVectors(t *testing.T) {
	c := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)

	t.Run("Signature", func(t *testing.T) {
		if got := c.Signature(wecomtest.VectorTimestamp, wecomtest.VectorNonce, wecomtest.VectorEchostr); got != wecomtest.VectorSignature {
			t.Fatalf("Signature = %s, want %s", got, wecomtest.VectorSignature)
		}
		if !c.VerifySignature(wecomtest.VectorSignature, wecomtest.VectorTimestamp, wecomtest.VectorNonce, wecomtest.VectorEchostr) {
			t.Fatal("VerifySignature rejected the official signature")
		}
	})
	t.Run("DecryptEchostr", func(t *testing.T) {
		got, err := c.Decrypt(wecomtest.VectorEchostr)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != wecomtest.VectorEchoPlain {
			t.Fatalf("Decrypt = %q, want %q", got, wecomtest.VectorEchoPlain)
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

// The DingTalk event-subscription vector: another receiveid. (Its padding is
// 27 bytes, to a 32-byte block; 16-byte padding is tested below.)
func TestCrypto_DingTalkVector(t *testing.T) {
	const (
		encrypt = "X1VSe9cTJUMZu60d3kyLYTrBq5578ZRJtteU94wG0Q4Uk6E/wQYeJRIC0/UFW5Wkya1Ihz9oXAdLlyC9TRaqsQ=="
		sig     = "f36f4ba5337d426c7d4bca0dbcb06b3ddc1388fc"
	)
	c := wecomtest.MustCrypto(t, "tokenxxxx", "o1w0aum42yaptlz8alnhwikjd3jenzt9cb9wmzptgus", "dingxxxxxx")
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
	key, _ := base64.StdEncoding.DecodeString(wecomtest.VectorKey + "=")
	c := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, receiveID)
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
	c := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, "")
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
	corp := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
	if _, err := c.Decrypt(vecHelloEnc); !errors.Is(err, wxbiz.ErrDecrypt) {
		t.Fatalf("corp message with empty receiveid: err = %v, want ErrDecrypt", err)
	}
	enc, _ := c.Encrypt([]byte("hi"), nil)
	if _, err := corp.Decrypt(enc); !errors.Is(err, wxbiz.ErrDecrypt) {
		t.Fatalf("bot message with corp receiveid: err = %v, want ErrDecrypt", err)
	}
}

func TestCrypto_Decrypt_Errors(t *testing.T) {
	c := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
	key, _ := base64.StdEncoding.DecodeString(wecomtest.VectorKey + "=")

	tests := map[string]string{
		"WrongReceiveID": mustEncrypt(t, wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, "wwotherCorp"), "hello"),
		"NotBase64":      "not base64 !!",
		"Empty":          "",
		"PartialBlock":   base64.StdEncoding.EncodeToString(make([]byte, 20)),
		"PadZero":        rawEncrypt(key, withPad(plainFor("hello", wecomtest.VectorCorpID), 0)),
		"PadTooLarge":    rawEncrypt(key, withPad(plainFor("hello", wecomtest.VectorCorpID), 33)),
		"PadInconsistent": rawEncrypt(key, func() []byte {
			p := withPad(plainFor("hello", wecomtest.VectorCorpID), 5)
			p[len(p)-3] = 4
			return p
		}()),
		"LengthOverflow": rawEncrypt(key, func() []byte {
			p := plainFor("hello", wecomtest.VectorCorpID)
			binary.BigEndian.PutUint32(p[16:20], 0xFFFFFFF0)
			return validPad(p)
		}()),
		"TooShort": rawEncrypt(key, validPad([]byte("short"))),
	}
	// Control: the same construction with nothing wrong decrypts, so each
	// case below fails for its own defect.
	if got, err := c.Decrypt(rawEncrypt(key, validPad(plainFor("hello", wecomtest.VectorCorpID)))); err != nil || string(got) != "hello" {
		t.Fatalf("control: %q, %v", got, err)
	}
	for name, enc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := c.Decrypt(enc); !errors.Is(err, wxbiz.ErrDecrypt) {
				t.Fatalf("err = %v, want ErrDecrypt", err)
			}
		})
	}
}

func TestCrypto_ForgedSignature(t *testing.T) {
	c := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
	other := wecomtest.MustCrypto(t, "otherToken", wecomtest.VectorKey, wecomtest.VectorCorpID)
	forged := other.Signature(wecomtest.VectorTimestamp, wecomtest.VectorNonce, wecomtest.VectorEchostr)
	for _, sig := range []string{forged, "", wecomtest.VectorSignature[:39], wecomtest.VectorSignature + "0"} {
		if c.VerifySignature(sig, wecomtest.VectorTimestamp, wecomtest.VectorNonce, wecomtest.VectorEchostr) {
			t.Fatalf("VerifySignature accepted %q", sig)
		}
	}
	// Any changed input invalidates the signature.
	if c.VerifySignature(wecomtest.VectorSignature, wecomtest.VectorTimestamp, wecomtest.VectorNonce+"1", wecomtest.VectorEchostr) {
		t.Fatal("VerifySignature accepted a changed nonce")
	}
}

func TestNewCrypto_Errors(t *testing.T) {
	for name, args := range map[string][2]string{
		"EmptyToken": {"", wecomtest.VectorKey},
		"ShortKey":   {wecomtest.VectorToken, wecomtest.VectorKey[:42]},
		"NotBase64":  {wecomtest.VectorToken, "!" + wecomtest.VectorKey[1:]},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := wxbiz.NewCrypto(args[0], args[1], wecomtest.VectorCorpID); err == nil {
				t.Fatal("NewCrypto accepted bad input")
			}
		})
	}
}

func FuzzDecrypt(f *testing.F) {
	f.Add(wecomtest.VectorEchostr)
	f.Add(vecHelloEnc)
	f.Add("")
	f.Add("AAAAAAAAAAAAAAAAAAAAAA==")
	c := wecomtest.MustCrypto(f, wecomtest.VectorToken, wecomtest.VectorKey, wecomtest.VectorCorpID)
	f.Fuzz(func(t *testing.T, enc string) {
		msg, err := c.Decrypt(enc)
		if err != nil {
			if !errors.Is(err, wxbiz.ErrDecrypt) {
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
		c := wecomtest.MustCrypto(t, wecomtest.VectorToken, wecomtest.VectorKey, receiveID)
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

func mustEncrypt(t *testing.T, c *wxbiz.Crypto, msg string) string {
	t.Helper()
	enc, err := c.Encrypt([]byte(msg), nil)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}
