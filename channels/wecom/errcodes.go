package wecom

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hermes-gw/hermes/channels"
	"github.com/silenceper/wechat/v2/util"
)

// APIError is an errcode answer from the WeCom API, with secrets removed.
// Errors returned by Send wrap it when WeCom answered; test with errors.As.
type APIError struct {
	Op      string // "gettoken" or "message/send"
	Code    int64  // WeCom errcode
	Message string // WeCom errmsg, redacted
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: errcode %d: %s", e.Op, e.Code, e.Message)
}

// codeAction says what Send does with an errcode.
type codeAction int

const (
	actRetry        codeAction = iota // transient: the caller may try again later
	actRefreshToken                   // drop the cached token, fetch a new one, send once more
	actPermanent                      // wraps channels.ErrPermanent: retrying the same message cannot help
)

type codeInfo struct {
	what   string // operator-facing meaning, in the returned error
	action codeAction
	alert  bool // also log at error level: the operator must change something in WeCom
}

// errcodes is the table of WeCom errcodes Send knows, from WeCom's global
// error code list (全局错误码). Unknown codes are treated as transient so a
// message is not dropped on a code we have not seen; the caller's retry
// budget bounds the cost.
var errcodes = map[int64]codeInfo{
	-1:    {"WeCom system busy", actRetry, false},
	40014: {"invalid access_token", actRefreshToken, false},
	42001: {"access_token expired", actRefreshToken, false},
	45009: {"API call rate limit reached", actRetry, false},
	45033: {"too many concurrent API calls", actRetry, false},

	// Configuration errors: nothing changes until an operator fixes the app.
	40001: {"invalid app secret", actPermanent, true},
	40013: {"invalid corp id", actPermanent, true},
	40056: {"invalid agent id", actPermanent, true},
	48002: {"API not permitted for this app", actPermanent, true},
	60020: {"server IP not in the app's trusted IP list", actPermanent, true},

	// The message or recipient is wrong: the same message fails again.
	40003: {"invalid user id", actPermanent, false},
	44004: {"empty text content", actPermanent, false},
	45002: {"content larger than WeCom allows", actPermanent, false},
	40004: {"invalid media type", actPermanent, false},
	40005: {"invalid file type", actPermanent, false},
	40006: {"invalid file size", actPermanent, false},
	40007: {"invalid media_id", actPermanent, false},
	40009: {"image larger than WeCom allows", actPermanent, false},
	60011: {"recipient outside the app's visible range", actPermanent, false},
	81013: {"user, party and tag all invalid or not permitted", actPermanent, false},
	82001: {"no valid recipient", actPermanent, false},
}

// hints are appended to the error for codes whose fix is not obvious.
var hints = map[int64]string{
	60020: "add this server's egress IP to the app's 企业可信IP in the WeCom admin console",
	40001: "check the app secret in the Hermes configuration",
}

func lookupCode(code int64) codeInfo {
	if info, ok := errcodes[code]; ok {
		return info
	}
	return codeInfo{what: "WeCom error", action: actRetry}
}

// tokenErrRE parses silenceper's untyped gettoken failure
// ("get access_token error : errcode=40001 , errormsg=...").
var tokenErrRE = regexp.MustCompile(`get access_token error : errcode=(-?\d+) , errormsg=(.*)`)

// apiErrorOf extracts WeCom's answer from a silenceper error; nil when the
// call failed before WeCom answered (network, HTTP status, bad JSON).
func apiErrorOf(err error) *APIError {
	var ce *util.CommonError
	if errors.As(err, &ce) {
		return &APIError{Op: "message/send", Code: ce.ErrCode, Message: ce.ErrMsg}
	}
	if m := tokenErrRE.FindStringSubmatch(err.Error()); m != nil {
		code, perr := strconv.ParseInt(m[1], 10, 64)
		if perr == nil {
			return &APIError{Op: "gettoken", Code: code, Message: m[2]}
		}
	}
	return nil
}

// secretParamRE matches the query parameters that carry credentials in the
// URLs silenceper puts into its errors (and net/http into *url.Error).
var secretParamRE = regexp.MustCompile(`(?i)\b(corpsecret|secret|access_token|key)=[^&\s"'<>,]*`)

// redact removes credentials from an error text: the query values above, and
// the app secret and any known token wherever else they might appear.
func redact(s string, literals ...string) string {
	s = secretParamRE.ReplaceAllString(s, "${1}=REDACTED")
	for _, lit := range literals {
		if len(lit) >= 6 { // a very short value would redact innocent text and hides nothing
			s = strings.ReplaceAll(s, lit, "REDACTED")
		}
	}
	return s
}

// callError turns a failure of one API call (op: "message/send",
// "media/upload") for a send to toUser ("": an upload for no one yet) into
// the error Send returns. The original error is not wrapped: its text
// carries the secret or the token. ctx's end (untilDone) is wrapped as is.
func (a *App) callError(op string, err error, toUser string) error {
	what := fmt.Sprintf("send to %q", toUser)
	if toUser == "" {
		what = "upload"
	}
	var done ctxDoneError
	if errors.As(err, &done) {
		return fmt.Errorf("wecom: app %q: %s: %w", a.name, what, done.err)
	}
	apiErr := apiErrorOf(err)
	if apiErr == nil {
		// Transport failure or a non-200 answer: transient.
		return fmt.Errorf("wecom: app %q: %s: %s", a.name, what, redact(err.Error(), a.secret))
	}
	if apiErr.Op != "gettoken" {
		apiErr.Op = op
	}
	apiErr.Message = redact(apiErr.Message, a.secret)
	info := lookupCode(apiErr.Code)
	msg := fmt.Sprintf("wecom: app %q: %s: %s: %s (WeCom errcode %d)", a.name, what, apiErr.Op, info.what, apiErr.Code)
	if h := hints[apiErr.Code]; h != "" {
		msg += ": " + h
	}
	if info.alert {
		a.log.Error("wecom: "+info.what,
			"account", a.name, "corp_id", a.corpID, "agent_id", a.agentID,
			"errcode", apiErr.Code, "errmsg", apiErr.Message)
	}
	if info.action == actPermanent {
		return fmt.Errorf("%s: %w: %w", msg, apiErr, channels.ErrPermanent)
	}
	return fmt.Errorf("%s: %w", msg, apiErr)
}

// refreshesToken reports whether err says the token was invalid or expired.
func refreshesToken(err error) bool {
	apiErr := apiErrorOf(err)
	return apiErr != nil && lookupCode(apiErr.Code).action == actRefreshToken
}
