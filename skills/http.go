package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// shortBodyBytes is how much of an error response goes into the error text:
// enough for a backend's reason, not a whole HTML error page.
const shortBodyBytes = 300

const userAgent = "hermes-skills/1"

// Headers of a skill request besides the identity (identity.go).
const (
	// HeaderCallbackURL carries the per-call URL an async skill's backend
	// POSTs its AsyncCallback to.
	HeaderCallbackURL = "X-Hermes-Callback-URL"
	// HeaderFiles carries, for skills with files: true, the URLs of the
	// attachments of the message the call is made for, in order, joined
	// by single spaces (a URL cannot hold a space; it may hold a comma).
	// Absent when there are none. Like HeaderCallbackURL it is not part of
	// the signed string: each URL is itself a capability minted by Hermes,
	// good for one file and this call, for a few minutes (the gateway's
	// media.file_url_ttl, default 10m). A GET answers the bytes with
	// Content-Type (sniffed from the bytes), Content-Length and
	// Content-Disposition (the file's name). A backend fetches only URLs
	// that start with Hermes's own public URL, configured on the backend,
	// and never follows any other (SSRF). FileURLs splits it.
	HeaderFiles = "X-Hermes-Files"
	// HeaderExecutionTime is the backend's own processing time in
	// milliseconds (seed 003); it becomes Result.Duration.
	HeaderExecutionTime = "X-Execution-Time"
)

// callHTTP sends one attempt to the skill's endpoint, with the caller's
// identity in headers the model cannot influence. The arguments are data:
// a "user_id" in them is just data; the backend decides from the headers.
func (r *Registry) callHTTP(ctx context.Context, inv *invocation) (Result, error) {
	s, creds := inv.skill, inv.creds
	callCtx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	req, body, err := r.newHTTPRequest(callCtx, s, inv.args)
	if errors.Is(err, ErrInvalidArguments) {
		return Result{}, fmt.Errorf("skill %s: %w", s.Name, err)
	}
	if err != nil {
		return Result{}, fmt.Errorf("skill %s %w: build request: %w", s.Name, ErrMisconfigured, err)
	}
	h := req.Header
	h.Set("User-Agent", userAgent)
	h.Set("Accept", "application/json")
	// Signed per attempt: each attempt is its own request with its own nonce.
	sr := inv.signRequest(r.opts.Now(), req.Method, req.URL.Host, req.URL.EscapedPath(), req.URL.RawQuery, body)
	if err := setIdentityHeaders(h, inv.caller, sr, creds.hmacKey); err != nil {
		return Result{}, fmt.Errorf("skill %s: %w", s.Name, err)
	}
	h.Set(HeaderTraceparent, traceparent(inv.caller))
	creds.apply(h)
	if inv.callbackURL != "" {
		h.Set(HeaderCallbackURL, inv.callbackURL)
	}
	if len(inv.fileURLs) > 0 {
		h.Set(HeaderFiles, strings.Join(inv.fileURLs, " "))
	}
	if inv.idempotencyKey != "" {
		h.Set(HeaderIdempotencyKey, inv.idempotencyKey)
	}

	began := r.opts.Now()
	resp, err := r.opts.HTTPClient.Do(req)
	if err != nil {
		return Result{}, transportError(ctx, s, err, creds)
	}
	defer resp.Body.Close()
	answer, err := readCapped(resp.Body, r.opts.MaxResponseBytes)
	if err != nil {
		if ctx.Err() == nil && callCtx.Err() != nil {
			err = fmt.Errorf("no complete answer within %s: %w", s.Timeout, context.DeadlineExceeded)
		}
		return Result{}, fmt.Errorf("skill %s %w: read response (HTTP %d): %w", s.Name, ErrUnavailable, resp.StatusCode,
			redactErr(err, creds))
	}
	// A backend that echoes the request must not leak our token to the model.
	text := redact(answer, creds.secrets()...)
	code := resp.StatusCode
	if !s.succeeded(code) {
		wait, _ := ParseRetryAfter(resp.Header, r.opts.Now())
		he := &HTTPError{Status: code, Body: shortBody(text, code), RetryAfter: wait}
		if code >= 400 && code < 500 && code != http.StatusTooManyRequests {
			return Result{}, fmt.Errorf("skill %s %w (%w)", s.Name, ErrRefused, he)
		}
		return Result{}, fmt.Errorf("skill %s %w (%w)", s.Name, ErrUnavailable, he)
	}
	res := Result{Status: code, ContentType: resp.Header.Get("Content-Type"), Body: []byte(text),
		Duration: measured(resp.Header.Get(HeaderExecutionTime), r.opts.Now().Sub(began))}
	if s.Async && code == http.StatusAccepted {
		var accepted struct {
			TaskID string `json:"task_id"`
		}
		_ = json.Unmarshal(res.Body, &accepted) // the callback URL identifies the call even without an id
		res.Async = &AsyncTask{TaskID: accepted.TaskID, CallbackURL: inv.callbackURL}
		if accepted.TaskID != "" {
			// Not an error of the call: the backend has the work, and
			// failing here would retry it. The callback is then checked
			// against the token alone.
			if err := r.opts.Async.Accepted(ctx, inv.callbackURL, accepted.TaskID); err != nil {
				r.opts.Logger.Warn("skills: accepted task id not recorded", "skill", s.Name, "task_id", accepted.TaskID,
					"trace_id", inv.caller.TraceID, "err", err)
			}
		}
	}
	return res, nil
}

// transportError classifies a request that got no HTTP answer.
func transportError(ctx context.Context, s *Skill, err error, creds credentials) error {
	switch {
	case ctx.Err() != nil: // the run ended (timeout or shutdown), not the skill
		return fmt.Errorf("skill %s: %w: %w", s.Name, errRunEnded, context.Cause(ctx))
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("skill %s %w: no answer within %s: %w", s.Name, ErrUnavailable, s.Timeout, context.DeadlineExceeded)
	default:
		return fmt.Errorf("skill %s %w: %w: %w", s.Name, ErrUnavailable, errNetwork, redactErr(err, creds))
	}
}

// succeeded says whether a status is a success for this skill.
func (s *Skill) succeeded(code int) bool {
	if len(s.SuccessStatus) > 0 {
		return slices.Contains(s.SuccessStatus, code)
	}
	return code >= 200 && code < 300
}

// ParseRetryAfter reads how long a 429 or 503 answer asks to wait:
// retry-after-ms (OpenAI-compatible endpoints), else Retry-After in
// seconds or as an HTTP date (a date in the past: 0). ok is false when
// the answer says nothing. It is the one reader of it: skill backends' and
// the model's answers alike.
func ParseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if ms, err := strconv.Atoi(strings.TrimSpace(h.Get("retry-after-ms"))); err == nil && ms >= 0 {
		return time.Duration(ms) * time.Millisecond, true
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
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

// redactErr keeps err's identity for errors.Is while hiding secrets in its
// text (a URL error can quote a header value).
func redactErr(err error, creds credentials) error {
	text := redact(err.Error(), creds.secrets()...)
	if text == err.Error() {
		return err
	}
	return &redactedError{text: text, err: err}
}

type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }
func (e *redactedError) Unwrap() error { return e.err }
