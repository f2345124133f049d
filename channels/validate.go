package channels

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// The rules a platform's section shares with the others, each written once:
// the section's Validate calls them (errors naming the full key), and so do
// the constructors that programs call without a section.

// accountNameRE is what an account (app, bot, robot) may be named: it goes
// into callback paths, queue names and log lines.
var accountNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidAccountName reports whether name is lower-case letters, digits and
// '-', at most 63 characters, starting with a letter or digit.
func ValidAccountName(name string) bool { return accountNameRE.MatchString(name) }

// CheckAccountName is ValidAccountName as an error that says the rule.
func CheckAccountName(name string) error {
	if !ValidAccountName(name) {
		return fmt.Errorf("required, lower-case letters, digits and '-' (at most 63, starting with a letter or digit), got %q", name)
	}
	return nil
}

// ParseBaseURL checks a platform API's base URL from the configuration: an
// absolute URL with one of schemes (e.g. "http", "https") and a host, and
// neither credentials, query nor fragment (they would be sent with every
// call, or dropped). It may have a path (a private deployment's prefix).
// It returns raw without trailing slashes, so base + "/path" is well
// formed.
func ParseBaseURL(raw string, schemes ...string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || !slices.Contains(schemes, u.Scheme) || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("must be %s URL with a host and no query, got %q", schemesPhrase(schemes), raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// schemesPhrase says which URLs ParseBaseURL takes: "an http(s)", "a
// ws:// or wss://".
func schemesPhrase(schemes []string) string {
	if slices.Equal(schemes, []string{"http", "https"}) {
		return "an http(s)"
	}
	return "a " + strings.Join(schemes, ":// or ") + "://"
}
