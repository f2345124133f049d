package agent

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/htmlindex"

	"github.com/hermes-gw/hermes/skills"
)

// observation is what one tool call produced, for the model (text) and for
// the loop (what to do next).
type observation struct {
	text     string // what the model sees
	doc      *jnode // the sanitised JSON answer, for templates and summaries; nil otherwise
	ok       bool   // a successful skill call: an answer, or work accepted
	fail     *errorClass
	followup string   // the backend's question when it needs more from the user
	options  []string // the answers it offers to pick from, if any
}

// observeResult turns a skill's answer into text for the model, by its
// content type: JSON sanitised and compacted (shrunk structurally when too
// long), text and HTML as readable text cut at head and tail, anything
// else described by type, hash and size.
// asyncObservation tells the model that a backend accepted work (202). It
// is JSON so that a model, and the offline demo model, can read it.
const asyncObservation = `{"status":"accepted","task_id":%q,"summary":"已受理，后台处理中（任务号 %[1]s），结果稍后会发到本会话。",` +
	`"note":"The result will be sent to this chat later. Tell the user it has started; do not wait or poll for it."}`

func observeResult(res skills.Result, spec skills.Spec, limit int, keep *safeSet) observation {
	switch {
	case res.Confirm != nil:
		return observation{text: fmt.Sprintf("Not executed: this action needs the user's confirmation first (%s). "+
			"The user has been asked; do not call it again.", res.Confirm.Prompt)}
	case res.Async != nil:
		return observation{ok: true, text: fmt.Sprintf(asyncObservation, res.Async.TaskID)}
	}
	if res.Status >= 300 { // a tool that reports a failure without an error
		sentinel := skills.ErrUnavailable
		if res.Status < 500 && res.Status >= 400 {
			sentinel = skills.ErrRefused
		}
		err := fmt.Errorf("skill %s %w (HTTP %d): %s", spec.Name, sentinel, res.Status, cutHead(string(res.Body), 300))
		text, class := describeError(spec.Name, err)
		return observation{text: text, fail: class}
	}

	safe := map[string]bool{}
	for _, f := range spec.SafeFields {
		safe[f] = true
	}
	body := res.Body
	mt, params, _ := mime.ParseMediaType(res.ContentType)
	if cs := params["charset"]; cs != "" && !strings.EqualFold(cs, "utf-8") {
		body = decodeCharset(body, cs)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return observation{ok: true, text: fmt.Sprintf("(empty answer, HTTP %d: the call succeeded without content)", max(res.Status, 200))}
	}
	switch bodyKind(mt, body) {
	case "json":
		if doc, err := parseJSON(body); err == nil {
			sanitizeJSON(doc, safe, keep)
			obs := observation{ok: true, doc: doc, text: string(shrinkJSON(doc, limit))}
			if f := doc.get("requires_followup"); f != nil && f.kind == jBool && f.text == "true" {
				obs.followup = followupQuestion(doc)
				obs.options = followupOptions(doc)
			}
			return obs
		}
	case "html":
		return observation{ok: true, text: cutHeadTail(maskPII(htmlToText(body), nil), limit)}
	case "binary":
		return observation{ok: true, text: fmt.Sprintf("binary content (%s), SHA-256 %x, %d bytes; it cannot be shown as text",
			cmpOr(mt, http.DetectContentType(body)), sha256.Sum256(body), len(body))}
	}
	return observation{ok: true, text: cutHeadTail(maskPII(string(body), nil), limit)}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// bodyKind decides how to read a body: by its media type, or by sniffing
// when the backend sent none or a generic one.
func bodyKind(mt string, body []byte) string {
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		return "json"
	case mt == "text/html" || mt == "application/xhtml+xml":
		return "html"
	case bytes.IndexByte(body, 0) >= 0 || !utf8.Valid(body):
		return "binary"
	case mt == "" || mt == "text/plain" || mt == "application/octet-stream":
		trimmed := bytes.TrimSpace(body)
		if (trimmed[0] == '{' || trimmed[0] == '[') && jsonValid(trimmed) {
			return "json"
		}
		if strings.HasPrefix(http.DetectContentType(body), "text/html") {
			return "html"
		}
		if mt == "application/octet-stream" {
			return "binary"
		}
		return "text"
	case strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+xml") ||
		mt == "application/xml" || mt == "application/yaml" || mt == "application/javascript":
		return "text"
	}
	return "binary"
}

func jsonValid(b []byte) bool { _, err := parseJSON(b); return err == nil }

// decodeCharset converts a body in a legacy encoding (GBK is common among
// Chinese backends) to UTF-8; unknown charsets are left alone.
func decodeCharset(body []byte, charset string) []byte {
	e, err := htmlindex.Get(charset)
	if err != nil {
		return body
	}
	out, err := e.NewDecoder().Bytes(body)
	if err != nil {
		return body
	}
	return out
}

// followupQuestion is what a backend that needs more information asks.
func followupQuestion(doc *jnode) string {
	for _, k := range []string{"question", "message", "prompt"} {
		if v := doc.get(k); v != nil && v.kind == jString && strings.TrimSpace(v.text) != "" {
			return strings.TrimSpace(v.text)
		}
	}
	return ""
}

// Bounds on the options a backend offers with its question: more or
// longer ones are not offered as choices (the question still is asked).
const (
	maxOptions     = 20
	maxOptionRunes = 64
)

// followupOptions are the strings of the answer's "options" array, when
// it is one of at most maxOptions short, distinct, non-empty strings.
func followupOptions(doc *jnode) []string {
	v := doc.get("options")
	if v == nil || v.kind != jArray || len(v.vals) == 0 || len(v.vals) > maxOptions {
		return nil
	}
	out := make([]string, 0, len(v.vals))
	for _, o := range v.vals {
		text := strings.TrimSpace(o.text)
		if o.kind != jString || text == "" || utf8.RuneCountInString(text) > maxOptionRunes || slices.Contains(out, text) {
			return nil
		}
		out = append(out, text)
	}
	return out
}

// errorClass describes a kind of tool failure: what the model is told and
// how the loop treats it.
type errorClass struct {
	kind   string // short type shown to the model
	fatal  bool   // stops the run: retrying cannot help
	counts bool   // counts toward withdrawing the tool (MaxToolFailures)
	cause  string // likely cause
	change string // what to change
	label  func(Messages) string
}

// errorClasses are tried in order; the last one matches everything.
var errorClasses = []struct {
	match func(err error, status int) bool
	class errorClass
}{
	{func(err error, status int) bool { return errors.Is(err, ErrFatalTool) },
		errorClass{kind: "fatal", fatal: true, cause: "the tool reported an error it cannot recover from",
			change: "nothing; stop and tell the user", label: func(m Messages) string { return m.FailFatal }}},
	{func(err error, status int) bool {
		return errors.Is(err, skills.ErrMisconfigured) || errors.Is(err, skills.ErrNoCaller)
	}, errorClass{kind: "misconfigured", fatal: true, cause: "the skill is not configured correctly (a missing secret or identity)",
		change: "nothing in the arguments; an administrator must fix it", label: func(m Messages) string { return m.FailFatal }}},
	{func(err error, status int) bool { return status == http.StatusUnauthorized },
		errorClass{kind: "unauthorized", fatal: true, cause: "the backend rejected Hermes' credentials (HTTP 401)",
			change: "nothing in the arguments; an administrator must renew the credentials", label: func(m Messages) string { return m.FailFatal }}},
	{func(err error, status int) bool { return errors.Is(err, skills.ErrAccessDenied) },
		errorClass{kind: "access_denied", cause: "this user may not use this tool",
			change: "nothing; tell the user they lack permission for it", label: func(m Messages) string { return m.FailRefused }}},
	{func(err error, status int) bool { return errors.Is(err, skills.ErrInvalidArguments) },
		errorClass{kind: "invalid_arguments", cause: "the arguments do not match the tool's parameters",
			change: "the arguments, following the tool's parameter description", label: func(m Messages) string { return m.FailInvalidArgs }}},
	{func(err error, status int) bool {
		return errors.Is(err, skills.ErrRefused) || status >= 400 && status < 500
	},
		errorClass{kind: "refused", cause: "the backend refused the request", change: "the arguments, or use another tool",
			label: func(m Messages) string { return m.FailRefused }}},
	{func(err error, status int) bool {
		return errors.Is(err, skills.ErrUnavailable) || status >= 500 || isTimeout(err)
	},
		errorClass{kind: "unavailable", counts: true, cause: "the backend is down, overloaded or too slow; the arguments are not the problem",
			change: "nothing in the arguments", label: func(m Messages) string { return m.FailUnavailable }}},
	{func(error, int) bool { return true },
		errorClass{kind: "failed", cause: "the tool failed", change: "the arguments, or use another tool",
			label: func(m Messages) string { return m.FailOther }}},
}

// refusedHints sharpen the cause and change of a 4xx by its status.
var refusedHints = map[int][2]string{
	http.StatusBadRequest:          {"the backend found the request malformed", "check each argument value against the description"},
	http.StatusForbidden:           {"this user is not allowed to do this", "nothing; tell the user they lack permission"},
	http.StatusNotFound:            {"what was asked for does not exist", "check the identifiers (ids, names, dates); ask the user if unsure"},
	http.StatusConflict:            {"it conflicts with the current state (already done or changed meanwhile)", "look up the current state first"},
	http.StatusUnprocessableEntity: {"the backend does not accept these values", "fix the values the message names"},
	http.StatusTooManyRequests:     {"the backend is rate limiting", "nothing now; tell the user to try again later"},
}

// classifyError finds the class of a tool error and the HTTP status it
// carries, if any.
func classifyError(err error) (*errorClass, int) {
	status := httpStatus(err)
	for i := range errorClasses {
		if errorClasses[i].match(err, status) {
			c := errorClasses[i].class
			if h, ok := refusedHints[status]; ok && c.kind == "refused" {
				c.cause, c.change = h[0], h[1]
			}
			return &c, status
		}
	}
	return nil, status // unreachable: the last class matches all
}

// describeError summarises a tool error for the model: its type, the
// likely cause, what to change, and one line of guidance. The tool's own
// message (already free of secrets) is kept short; stack traces and long
// bodies only distract the model.
func describeError(tool string, err error) (string, *errorClass) {
	class, _ := classifyError(err)
	guidance := "You may correct the arguments and call it again, use another tool, or tell the user what failed. Do not repeat an identical call."
	switch {
	case class.fatal:
		guidance = "Do not call it again; the user will be told."
	case class.counts:
		// The loop does not count a retry of a transient failure as a
		// repeat (writes.go), so this promise holds.
		guidance = "You may try once more with the same arguments (a retry after this error is not a repeat), " +
			"use another tool, or tell the user this system is unavailable right now."
	}
	msg := maskPII(cutHeadTail(firstLine(err.Error()), 400), nil)
	return fmt.Sprintf("error: %s: %s\nlikely cause: %s\nwhat to change: %s\n%s", class.kind, msg, class.cause, class.change, guidance), class
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// httpStatus finds the HTTP status in a tool error: a *skills.HTTPError,
// an error that reports it (HTTPStatus() int), else the "(HTTP 401)"
// wording of skills' messages.
func httpStatus(err error) int {
	var he *skills.HTTPError
	if errors.As(err, &he) {
		return he.Status
	}
	var withStatus interface{ HTTPStatus() int }
	if errors.As(err, &withStatus) {
		return withStatus.HTTPStatus()
	}
	msg := err.Error()
	if i := strings.Index(msg, "(HTTP "); i >= 0 && len(msg) >= i+9 {
		code := msg[i+6 : i+9]
		n := 0
		for _, c := range []byte(code) {
			if c < '0' || c > '9' {
				return 0
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	return 0
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout() || strings.Contains(err.Error(), "deadline exceeded")
}
