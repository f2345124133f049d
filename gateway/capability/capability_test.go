package capability

import (
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	const key = "test-callback-key-0123456789"
	a, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(key)
	if a == b || !Valid(key, a) || !Valid(key, b) {
		t.Fatalf("tokens %q, %q: want two different valid ones", a, b)
	}
	nonce, sig, _ := strings.Cut(a, ".")
	for name, bad := range map[string]string{
		"other key":      mustNew(t, "another-key-0123456789"),
		"altered sig":    nonce + "." + strings.Repeat("A", len(sig)),
		"swapped nonce":  strings.SplitN(b, ".", 2)[0] + "." + sig,
		"no dot":         nonce + sig,
		"short nonce":    nonce[:8] + "." + sig,
		"not base64":     "!!!!." + sig,
		"empty":          "",
		"trailing bytes": a + "x",
	} {
		if Valid(key, bad) {
			t.Errorf("%s: %q accepted", name, bad)
		}
	}
	if h1, h2 := Hash(a), Hash(b); len(h1) != 32 || string(h1) == string(h2) {
		t.Errorf("hashes %x, %x", h1, h2)
	}
}

func mustNew(t *testing.T, key string) string {
	t.Helper()
	tok, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// FuzzValid: no token, however made, panics or passes without the key's
// signature.
func FuzzValid(f *testing.F) {
	const key = "test-callback-key-0123456789"
	good, _ := New(key)
	f.Add(good)
	f.Add("a.b")
	f.Fuzz(func(t *testing.T, token string) {
		if Valid(key, token) && token != good {
			nonce, _, _ := strings.Cut(token, ".")
			if sign(key, mustDecode(t, nonce)) != token {
				t.Fatalf("%q accepted", token)
			}
		}
	})
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := encoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
