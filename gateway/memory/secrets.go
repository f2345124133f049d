package memory

import (
	"regexp"
	"strings"
	"unicode"
)

// secretValue is a credential given a value: 「密码是 Abc123」, "token:
// xyz", 「验证码 482913」. Naming one is fine (「已重置 VPN 密码」); stating it
// is never remembered.
var secretValue = regexp.MustCompile(`(?i)(密码|口令|验证码|动态码|私钥|密钥|pin码|cvv|password|passwd|pwd|token|secret|api[ _-]?key)\s*(是|为|改成|改为|设为|设成|:|：|=)?\s*[A-Za-z0-9!@#$%^&*()_+\-=.]{4,}`)

// minKeyLength is the shortest run of letters and digits (mixed) taken
// for a key or a password: "VPN-1001" is not one, "sk-4f9aQ2…" is.
const minKeyLength = 16

// holdsSecret reports whether text states a secret or carries what looks
// like a key: a long run of mixed letters and digits.
func holdsSecret(text string) bool {
	if secretValue.MatchString(text) {
		return true
	}
	for _, run := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '+' || r == '/'))
	}) {
		if len(run) >= minKeyLength && strings.ContainsFunc(run, unicode.IsDigit) && strings.ContainsFunc(run, unicode.IsLetter) {
			return true
		}
	}
	return false
}
