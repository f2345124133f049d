package console_test

import (
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/web/console"
)

// Every check word a platform may record is explained in both languages,
// not shown as its bare word.
func TestEveryRefusalCheckExplained(t *testing.T) {
	checks := []string{channels.CheckSignature, channels.CheckTimestamp, channels.CheckDecrypt, channels.CheckToken,
		channels.CheckMalformed, channels.CheckReplay, channels.CheckCorp}
	for _, lang := range []string{"zh", "en"} {
		for _, check := range checks {
			if console.Texts(lang)["refusal_"+check] == "" {
				t.Errorf("%s: no text for refusal check %q", lang, check)
			}
		}
	}
}
