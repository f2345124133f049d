package wecom

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
	"github.com/silenceper/wechat/v2/util"
)

// tokenErrRE parses silenceper's untyped gettoken failure
// ("get access_token error : errcode=40001 , errormsg=...").
var tokenErrRE = regexp.MustCompile(`get access_token error : errcode=(-?\d+) , errormsg=(.*)`)

// apiErrorOf extracts WeCom's answer from a silenceper error; nil when the
// call failed before WeCom answered (network, HTTP status, bad JSON).
func apiErrorOf(err error) *wxbiz.APIError {
	var ce *util.CommonError
	if errors.As(err, &ce) {
		return &wxbiz.APIError{Op: "message/send", Code: ce.ErrCode, Message: ce.ErrMsg}
	}
	if m := tokenErrRE.FindStringSubmatch(err.Error()); m != nil {
		code, perr := strconv.ParseInt(m[1], 10, 64)
		if perr == nil {
			return &wxbiz.APIError{Op: "gettoken", Code: code, Message: m[2]}
		}
	}
	return nil
}

// callError turns a failure of one API call (op: "message/send",
// "media/upload", ...) made for what ("send to \"u1\"", "upload") into
// the error Send returns. The original error is not wrapped: its text
// carries the secret or the token. ctx's end (untilDone) is wrapped as is.
func (a *App) callError(op string, err error, what string) error {
	var done ctxDoneError
	if errors.As(err, &done) {
		return fmt.Errorf("wecom: app %q: %s: %w", a.name, what, done.err)
	}
	apiErr := apiErrorOf(err)
	if apiErr == nil {
		// Transport failure or a non-200 answer: transient.
		return fmt.Errorf("wecom: app %q: %s: %s", a.name, what, wxbiz.Redact(err.Error(), a.secret))
	}
	if apiErr.Op != "gettoken" {
		apiErr.Op = op
	}
	apiErr.Message = wxbiz.Redact(apiErr.Message, a.secret)
	info := wxbiz.LookupCode(apiErr.Code)
	msg := fmt.Sprintf("wecom: app %q: %s: %s: %s (WeCom errcode %d)", a.name, what, apiErr.Op, info.What, apiErr.Code)
	if h := info.Hint; h != "" {
		msg += ": " + h
	}
	if info.Alert {
		a.log.Error("wecom: "+info.What,
			"account", a.name, "corp_id", a.corpID, "agent_id", a.agentID,
			"errcode", apiErr.Code, "errmsg", apiErr.Message)
	}
	if info.Action == wxbiz.Permanent {
		return fmt.Errorf("%s: %w: %w", msg, apiErr, channels.ErrPermanent)
	}
	return fmt.Errorf("%s: %w", msg, apiErr)
}

// refreshesToken reports whether err says the token was invalid or expired.
func refreshesToken(err error) bool {
	apiErr := apiErrorOf(err)
	return apiErr != nil && wxbiz.LookupCode(apiErr.Code).Action == wxbiz.RefreshToken
}
