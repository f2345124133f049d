package wxbiz

import (
	"fmt"
	"regexp"
	"strings"
)

// APIError is an errcode answer from the WeCom API (or from an AI bot's
// response_url or long connection), with secrets removed. Errors returned
// by Send wrap it when WeCom answered; test with errors.As.
type APIError struct {
	Op      string // "gettoken", "message/send", "response_url", "aibot_send_msg", ...
	Code    int64  // WeCom errcode
	Message string // WeCom errmsg, redacted
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: errcode %d: %s", e.Op, e.Code, e.Message)
}

// Action says what Send does with an errcode.
type Action int

// The actions on an errcode.
const (
	Retry        Action = iota // transient: the caller may try again later
	RefreshToken               // drop the cached token, fetch a new one, send once more
	Permanent                  // wraps channels.ErrPermanent: retrying the same message cannot help
)

// CodeInfo is what Hermes knows of one errcode.
type CodeInfo struct {
	What   string // operator-facing meaning, in the returned error
	Action Action
	Alert  bool   // also log at error level: the operator must change something in WeCom
	Hint   string // the fix, appended to the error where it is not obvious
}

// errcodes is the table of WeCom errcodes Hermes knows, from WeCom's global
// error code list (全局错误码). Unknown codes are treated as transient so a
// message is not dropped on a code we have not seen (LookupCode); the
// caller's retry budget bounds the cost.
var errcodes = map[int64]CodeInfo{
	-1:    {"WeCom system busy", Retry, false, ""},
	40014: {"invalid access_token", RefreshToken, false, ""},
	42001: {"access_token expired", RefreshToken, false, ""},
	45009: {"API call rate limit reached", Retry, false, ""},
	45033: {"too many concurrent API calls", Retry, false, ""},

	// Configuration errors: nothing changes until an operator fixes the app.
	40001: {"invalid app secret", Permanent, true, "check the app secret in the Hermes configuration"},
	40013: {"invalid corp id", Permanent, true, ""},
	40056: {"invalid agent id", Permanent, true, ""},
	48002: {"API not permitted for this app", Permanent, true, ""},
	60020: {"server IP not in the app's trusted IP list", Permanent, true,
		"add this server's egress IP to the app's 企业可信IP in the WeCom admin console"},

	// The message or recipient is wrong: the same message fails again.
	40003: {"invalid user id", Permanent, false, ""},
	44004: {"empty text content", Permanent, false, ""},
	45002: {"content larger than WeCom allows", Permanent, false, ""},
	40004: {"invalid media type", Permanent, false, ""},
	40005: {"invalid file type", Permanent, false, ""},
	40006: {"invalid file size", Permanent, false, ""},
	40007: {"invalid media_id", Permanent, false, ""},
	40009: {"image larger than WeCom allows", Permanent, false, ""},
	60011: {"recipient outside the app's visible range", Permanent, false, ""},
	81013: {"user, party and tag all invalid or not permitted", Permanent, false, ""},
	82001: {"no valid recipient", Permanent, false, ""},
}

// LookupCode is what to do with code: its entry, or a transient "WeCom
// error" for a code not in the table.
func LookupCode(code int64) CodeInfo {
	if info, ok := errcodes[code]; ok {
		return info
	}
	return CodeInfo{What: "WeCom error", Action: Retry}
}

// Known is code's entry in the table; false for a code not in it.
func Known(code int64) (CodeInfo, bool) {
	info, ok := errcodes[code]
	return info, ok
}

// Transient reports whether code is one WeCom documents as transient
// (system busy, rate limits). An AI bot's answer with any other code fails
// the same way every time (a response_url used twice, a message refused).
func Transient(code int64) bool {
	info, ok := errcodes[code]
	return ok && info.Action == Retry
}

// secretParamRE matches the query parameters that carry credentials in the
// URLs silenceper puts into its errors (and net/http into *url.Error).
var secretParamRE = regexp.MustCompile(`(?i)\b(corpsecret|secret|access_token|key)=[^&\s"'<>,]*`)

// Redact removes credentials from an error text: the query values above, and
// the app secret and any known token wherever else they might appear.
func Redact(s string, literals ...string) string {
	s = secretParamRE.ReplaceAllString(s, "${1}=REDACTED")
	for _, lit := range literals {
		if len(lit) >= 6 { // a very short value would redact innocent text and hides nothing
			s = strings.ReplaceAll(s, lit, "REDACTED")
		}
	}
	return s
}
