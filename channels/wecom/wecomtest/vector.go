package wecomtest

import (
	"testing"

	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// The official WeCom vector (protocols.md): a callback configuration and
// the URL verification WeCom sends for it.
const (
	VectorToken     = "QDG6eK"
	VectorKey       = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	VectorCorpID    = "wx5823bf96d3bd56c7"
	VectorTimestamp = "1409659589"
	VectorNonce     = "263014780"
	VectorEchostr   = "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ=="
	VectorSignature = "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3"
	VectorEchoPlain = "1616140317555161061"
)

// MustCrypto is the codec of one callback configuration; t fails if the
// crypto refuses it.
func MustCrypto(t testing.TB, token, key, receiveID string) *wxbiz.Crypto {
	t.Helper()
	c, err := wxbiz.NewCrypto(token, key, receiveID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
