package wxbiz

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

const (
	// encodingAESKeyLen: the EncodingAESKey is 43 base64 characters (32 bytes
	// once the missing "=" is added back).
	encodingAESKeyLen = 43
	// randomPrefixLen: every plaintext starts with 16 random bytes.
	randomPrefixLen = 16
	// lengthPrefixLen: then a big-endian uint32 message length.
	lengthPrefixLen = 4
)

// PadBlock: WeCom pads to 32-byte blocks (PKCS#7 with block 32), callbacks
// and an AI bot's encrypted files alike, while DingTalk's sample pads to
// 16, so Decrypt accepts pad values 1..32.
const PadBlock = 32

// Crypto is the WXBizMsgCrypt codec shared by WeCom self-built apps, WeCom AI
// bots and DingTalk event callbacks. It is safe for concurrent use.
type Crypto struct {
	token     string
	key       []byte // 32 bytes; the IV is key[:16]
	block     cipher.Block
	receiveID string
}

// NewCrypto returns a codec for one callback configuration. receiveID is the
// corp id for a self-built app, "" for an AI bot (智能机器人), the corp id /
// appKey / suiteKey for DingTalk. It fails when token is empty or the
// EncodingAESKey is not 43 base64 characters.
func NewCrypto(token, encodingAESKey, receiveID string) (*Crypto, error) {
	if token == "" {
		return nil, errors.New("wecom: crypto: empty token")
	}
	key, err := DecodeAESKey(encodingAESKey)
	if err != nil {
		return nil, fmt.Errorf("wecom: crypto: EncodingAESKey %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("wecom: crypto: %w", err)
	}
	return &Crypto{token: token, key: key, block: block, receiveID: receiveID}, nil
}

// DecodeAESKey is the one rule for an EncodingAESKey (the configs'
// Validate and NewCrypto all call it): 43 base64 characters, the 32-byte
// AES key without its "=".
func DecodeAESKey(k string) ([]byte, error) {
	if len(k) != encodingAESKeyLen {
		return nil, fmt.Errorf("must be %d characters of base64 (WeCom EncodingAESKey), got %d", encodingAESKeyLen, len(k))
	}
	key, err := base64.StdEncoding.DecodeString(k + "=")
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("must be %d characters of base64 (WeCom EncodingAESKey): not base64", encodingAESKeyLen)
	}
	return key, nil
}

// Key returns a copy of the 32-byte AES key: an AI bot in callback mode
// receives its attachments encrypted with it.
func (c *Crypto) Key() []byte { return bytes.Clone(c.key) }

// Signature returns msg_signature: hex(sha1(concat(sort(token, timestamp,
// nonce, encrypt)))).
func (c *Crypto) Signature(timestamp, nonce, encrypt string) string {
	parts := []string{c.token, timestamp, nonce, encrypt}
	sort.Strings(parts)
	sum := sha1.Sum([]byte(strings.Join(parts, "")))
	return hex.EncodeToString(sum[:])
}

// VerifySignature reports whether sig is the signature of the other three
// values. The comparison takes constant time so that a forger learns nothing
// from timing; an empty sig never verifies.
func (c *Crypto) VerifySignature(sig, timestamp, nonce, encrypt string) bool {
	if sig == "" {
		return false
	}
	want := c.Signature(timestamp, nonce, encrypt)
	return subtle.ConstantTimeCompare([]byte(strings.ToLower(sig)), []byte(want)) == 1
}

// Decrypt returns the message inside a base64 ciphertext after checking the
// padding, the length prefix and the receiveid. Every failure wraps
// ErrDecrypt. Verify the signature first: Decrypt authenticates nothing.
func (c *Crypto) Decrypt(encrypt string) ([]byte, error) {
	data, err := base64.StdEncoding.DecodeString(encrypt)
	if err != nil {
		return nil, fmt.Errorf("%w: ciphertext is not base64", ErrDecrypt)
	}
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("%w: ciphertext of %d bytes is not whole AES blocks", ErrDecrypt, len(data))
	}
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(c.block, c.key[:aes.BlockSize]).CryptBlocks(plain, data)

	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > PadBlock || pad > len(plain) {
		return nil, fmt.Errorf("%w: bad padding", ErrDecrypt)
	}
	for _, b := range plain[len(plain)-pad:] {
		if int(b) != pad {
			return nil, fmt.Errorf("%w: bad padding", ErrDecrypt)
		}
	}
	plain = plain[:len(plain)-pad]

	const header = randomPrefixLen + lengthPrefixLen
	if len(plain) < header {
		return nil, fmt.Errorf("%w: plaintext too short", ErrDecrypt)
	}
	n := binary.BigEndian.Uint32(plain[randomPrefixLen:header])
	if uint64(n) > uint64(len(plain)-header) {
		return nil, fmt.Errorf("%w: length prefix %d exceeds the plaintext", ErrDecrypt, n)
	}
	msg := plain[header : header+int(n)]
	if got := plain[header+int(n):]; !bytes.Equal(got, []byte(c.receiveID)) {
		// Another corp's (or app type's) message encrypted with a leaked or
		// shared key must not pass as ours.
		return nil, fmt.Errorf("%w: receiveid %q, want %q", ErrDecrypt, got, c.receiveID)
	}
	return msg, nil
}

// Encrypt returns the base64 ciphertext of msg for this receiveid, padded to
// 32-byte blocks as WeCom does. random16 is the 16-byte random prefix; nil
// draws it from crypto/rand (tests pass a fixed one to reproduce vectors).
func (c *Crypto) Encrypt(msg []byte, random16 []byte) (string, error) {
	if random16 == nil {
		random16 = make([]byte, randomPrefixLen)
		if _, err := rand.Read(random16); err != nil {
			return "", fmt.Errorf("wecom: encrypt: %w", err)
		}
	}
	if len(random16) != randomPrefixLen {
		return "", fmt.Errorf("wecom: encrypt: random prefix of %d bytes, want %d", len(random16), randomPrefixLen)
	}
	if uint64(len(msg)) > math.MaxUint32 {
		return "", errors.New("wecom: encrypt: message too long")
	}
	plain := make([]byte, 0, randomPrefixLen+lengthPrefixLen+len(msg)+len(c.receiveID)+PadBlock)
	plain = append(plain, random16...)
	plain = binary.BigEndian.AppendUint32(plain, uint32(len(msg)))
	plain = append(plain, msg...)
	plain = append(plain, c.receiveID...)
	pad := PadBlock - len(plain)%PadBlock // 1..32: a full block of padding when already aligned
	plain = append(plain, bytes.Repeat([]byte{byte(pad)}, pad)...)

	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(c.block, c.key[:aes.BlockSize]).CryptBlocks(out, plain)
	return base64.StdEncoding.EncodeToString(out), nil
}
