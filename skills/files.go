package skills

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
)

// FileIssuer gives a skill that takes files (files: true) the URLs of the
// attachments of the message its call is made for (Caller.Origin), each
// good for that one file and that one call, in the message's order.
// None (no origin message, no attachments) is an empty list, not an error.
type FileIssuer interface {
	Files(ctx context.Context, c Caller, skill string) ([]string, error)
}

// FileURLs returns the file URLs a skill request carries in HeaderFiles,
// in the message's order; nil when there are none. For backends written
// in Go.
//
// The header is not signed: fetch a URL only when it starts with Hermes's
// own public URL as configured on the backend (with its trailing "/", so
// that https://hermes.example.com.evil.test does not pass), never follow
// any other (SSRF).
func FileURLs(r *http.Request) []string {
	var urls []string
	for _, v := range r.Header.Values(HeaderFiles) {
		urls = append(urls, strings.Fields(v)...) // Fields drops empty pieces
	}
	return urls
}

// checkFileURLs refuses what the issuer returned when it cannot travel in
// HeaderFiles intact: the URLs are joined by spaces, so one holding
// whitespace would reach the backend as two, and the backend fetches
// each, so anything but an absolute http(s) URL is a bug of the issuer.
// Errors name the URL by position only: each one is a capability.
func checkFileURLs(urls []string) error {
	for i, raw := range urls {
		if strings.ContainsFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
			return fmt.Errorf("file URL %d contains whitespace", i+1)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("file URL %d is not an absolute http(s) URL", i+1)
		}
	}
	return nil
}
