package feishu

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// Crypto is an app's Encrypt Key (加密策略 → Encrypt Key): it decrypts event
// bodies and checks their signature.
type Crypto struct {
	encryptKey string
	key        [32]byte // SHA256(encrypt_key), the AES-256 key
}

// NewCrypto returns the codec of encryptKey.
func NewCrypto(encryptKey string) *Crypto {
	return &Crypto{encryptKey: encryptKey, key: sha256.Sum256([]byte(encryptKey))}
}

// Decrypt opens an "encrypt" value: base64 of IV (16 bytes) ‖ AES-256-CBC
// ciphertext, PKCS#7 padded to 16. The padding is removed (the official SDK
// leaves it in place, which breaks strict JSON decoders).
//
// Errors wrap ErrDecrypt.
func (c *Crypto) Decrypt(encrypt string) ([]byte, error) {
	buf, err := base64.StdEncoding.DecodeString(encrypt)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64: %v", ErrDecrypt, err)
	}
	if len(buf) < 2*aes.BlockSize || len(buf)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not IV plus whole blocks", ErrDecrypt, len(buf))
	}
	block, err := aes.NewCipher(c.key[:])
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecrypt, err)
	}
	iv, data := buf[:aes.BlockSize], buf[aes.BlockSize:]
	plain := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, data)
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > aes.BlockSize || !bytes.Equal(plain[len(plain)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, fmt.Errorf("%w: bad PKCS#7 padding", ErrDecrypt)
	}
	return plain[:len(plain)-pad], nil
}

// Encrypt seals plain the way Feishu does (a random IV); the fakes in
// feishutest use it to build events.
func (c *Crypto) Encrypt(plain []byte) (string, error) {
	var iv [aes.BlockSize]byte
	if _, err := rand.Read(iv[:]); err != nil {
		return "", fmt.Errorf("feishu: encrypt: %w", err)
	}
	return c.encryptIV(plain, iv)
}

// encryptIV is Encrypt with a given IV (fuzzing needs the same bytes for
// the same input).
func (c *Crypto) encryptIV(plain []byte, iv [aes.BlockSize]byte) (string, error) {
	block, err := aes.NewCipher(c.key[:])
	if err != nil {
		return "", fmt.Errorf("feishu: encrypt: %w", err)
	}
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	data := append(append([]byte(nil), plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, aes.BlockSize+len(data))
	copy(out, iv[:])
	cipher.NewCBCEncrypter(block, iv[:]).CryptBlocks(out[aes.BlockSize:], data)
	return base64.StdEncoding.EncodeToString(out), nil
}

// Signature is X-Lark-Signature: hex(sha256(timestamp + nonce + encrypt_key
// + raw body)).
func (c *Crypto) Signature(timestamp, nonce string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(timestamp))
	h.Write([]byte(nonce))
	h.Write([]byte(c.encryptKey))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// VerifySignature compares sig with Signature in constant time.
func (c *Crypto) VerifySignature(sig, timestamp, nonce string, body []byte) bool {
	want := c.Signature(timestamp, nonce, body)
	return sig != "" && subtle.ConstantTimeCompare([]byte(want), []byte(sig)) == 1
}
