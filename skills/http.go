package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// shortBodyBytes is how much of an error response goes into the error text:
// enough for a backend's reason, not a whole HTML error page.
const shortBodyBytes = 300

const userAgent = "hermes-skills/1"

func isPath(endpoint string) bool { return strings.HasPrefix(endpoint, "/") }

// callHTTP sends the model's arguments to the skill's endpoint, with the
// caller's identity in headers the model cannot influence. The arguments go
// as-is: a "user_id" in them is just data, the backend decides from headers.
func (r *Registry) callHTTP(ctx context.Context, s *Skill, c Caller, args json.RawMessage) (Result, error) {
	token, key, err := r.secrets(s)
	if err != nil {
		return Result{}, err
	}
	endpoint := s.Endpoint
	if isPath(endpoint) {
		endpoint = strings.TrimSuffix(r.opts.BaseURL, "/") + endpoint
	}

	callCtx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	req, err := newHTTPRequest(callCtx, s.Method, endpoint, args)
	if err != nil {
		return Result{}, fmt.Errorf("skill %s %w: build request: %w", s.Name, ErrMisconfigured, err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "application/json")
	if err := setIdentityHeaders(req.Header, c, r.opts.Now(), key); err != nil {
		return Result{}, fmt.Errorf("skill %s: %w", s.Name, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}

	began := r.opts.Now()
	resp, err := r.opts.HTTPClient.Do(req)
	if err != nil {
		switch {
		case ctx.Err() != nil: // the run ended (timeout or shutdown), not the skill
			return Result{}, fmt.Errorf("skill %s: %w", s.Name, context.Cause(ctx))
		case errors.Is(err, context.DeadlineExceeded):
			return Result{}, fmt.Errorf("skill %s %w: no answer within %s: %w", s.Name, ErrUnavailable, s.Timeout, context.DeadlineExceeded)
		default:
			return Result{}, fmt.Errorf("skill %s %w: %s", s.Name, ErrUnavailable, redact(err.Error(), token, string(key)))
		}
	}
	defer resp.Body.Close()
	body, err := readCapped(resp.Body, r.opts.MaxResponseBytes)
	if err != nil {
		return Result{}, fmt.Errorf("skill %s %w: read response (HTTP %d): %s", s.Name, ErrUnavailable, resp.StatusCode, redact(err.Error(), token, string(key)))
	}
	// A backend that echoes the request must not leak our token to the model.
	text := redact(body, token, string(key))
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return Result{Status: code, ContentType: resp.Header.Get("Content-Type"), Body: []byte(text), Duration: r.opts.Now().Sub(began)}, nil
	case code >= 400 && code < 500:
		return Result{}, fmt.Errorf("skill %s %w (HTTP %d): %s", s.Name, ErrRefused, code, shortBody(text, code))
	default:
		return Result{}, fmt.Errorf("skill %s %w (HTTP %d): %s", s.Name, ErrUnavailable, code, shortBody(text, code))
	}
}

// secrets reads the skill's token and HMAC key from the environment. A
// configured variable that is unset is an error rather than a silent
// unauthenticated or unsigned call: fail closed.
func (r *Registry) secrets(s *Skill) (token string, key []byte, err error) {
	if s.Auth != nil {
		if token = r.opts.Getenv(s.Auth.TokenEnv); token == "" {
			return "", nil, fmt.Errorf("skill %s %w: auth.token_env: environment variable %s is not set",
				s.Name, ErrMisconfigured, s.Auth.TokenEnv)
		}
	}
	if field, env := r.hmacKeyEnv(s); env != "" {
		if key = []byte(r.opts.Getenv(env)); len(key) == 0 {
			return "", nil, fmt.Errorf("skill %s %w: %s: environment variable %s is not set; refusing to send an unsigned identity",
				s.Name, ErrMisconfigured, field, env)
		}
	}
	return token, key, nil
}

// newHTTPRequest puts the arguments in a JSON body, or for GET and DELETE in
// the query string (top-level values; nested ones as JSON text).
func newHTTPRequest(ctx context.Context, method, endpoint string, args json.RawMessage) (*http.Request, error) {
	if methodHasBody[method] {
		req, err := http.NewRequestWithContext(ctx, method, endpoint, bytes.NewReader(args))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return nil, err
	}
	q := u.Query()
	for k, v := range fields {
		var str string
		if json.Unmarshal(v, &str) != nil {
			str = string(v) // numbers, booleans, arrays and objects as JSON text
		}
		q.Set(k, str)
	}
	u.RawQuery = q.Encode()
	return http.NewRequestWithContext(ctx, method, u.String(), nil)
}

// readCapped reads at most max bytes, cut at a rune boundary, and says so
// in the text so the model knows the answer is incomplete.
func readCapped(body io.Reader, max int) (string, error) {
	b, err := io.ReadAll(io.LimitReader(body, int64(max)+1))
	if err != nil {
		return "", err
	}
	if len(b) <= max {
		return string(b), nil
	}
	return truncateUTF8(string(b), max) + "\n[truncated by Hermes: the response was longer]", nil
}

// shortBody makes an error body one short line, or the status text when empty.
func shortBody(body string, code int) string {
	body = strings.Join(strings.Fields(body), " ")
	if body == "" {
		return http.StatusText(code)
	}
	if len(body) > shortBodyBytes {
		return truncateUTF8(body, shortBodyBytes) + "…"
	}
	return body
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// redact hides secrets a backend might echo back (tokens, HMAC keys).
func redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[REDACTED]")
		}
	}
	return s
}
