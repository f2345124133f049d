// Package capability mints and checks the tokens at the end of URLs
// Hermes hands out to skill backends (an async call's callback URL, a
// file's URL): whoever holds one may do that one thing. A token is
// base64url(nonce) "." base64url(HMAC-SHA256(server.callback_key, nonce)):
// the signature lets a forged URL be refused before any database work, and
// the tables store only SHA-256(token), so a database dump opens nothing.
package capability

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
)

// nonceBytes is the random part of a token: 144 bits.
const nonceBytes = 18

// encoding writes a token's two halves (URL-safe, no padding).
var encoding = base64.RawURLEncoding

// New mints a token signed with key.
func New(key string) (string, error) {
	nonce := make([]byte, nonceBytes)
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("capability: %w", err)
	}
	return sign(key, nonce), nil
}

func sign(key string, nonce []byte) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(nonce)
	return encoding.EncodeToString(nonce) + "." + encoding.EncodeToString(mac.Sum(nil))
}

// Valid reports, in constant time, whether token was signed with key.
func Valid(key, token string) bool {
	nonceText, _, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	nonce, err := encoding.DecodeString(nonceText)
	if err != nil || len(nonce) != nonceBytes {
		return false
	}
	return hmac.Equal([]byte(sign(key, nonce)), []byte(token))
}

// Hash is what the database keeps of a token.
func Hash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}
