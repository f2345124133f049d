package dingtalk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// api calls DingTalk's OpenAPI (api.dingtalk.com, header token) and the
// legacy API (oapi.dingtalk.com, query token) for one app. Both take the
// same app access token.
type api struct {
	base, oapi        string
	appKey, appSecret string
	tokens            channels.TokenCache
	http              *http.Client
	log               *slog.Logger
}

// APIError is an error answer from DingTalk.
type APIError struct {
	Status  int    // HTTP status
	Code    string // the OpenAPI's "code", or the legacy API's errcode
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("dingtalk: HTTP %d %s: %s", e.Status, e.Code, e.Message)
}

// apiErrorKinds classify OpenAPI and legacy error codes; codes not listed
// are classified by HTTP status (5xx and 429 retry, other 4xx do not).
var apiErrorKinds = map[string]errorKind{
	"InvalidAuthentication": kindToken, // OpenAPI: token invalid or expired
	"40014":                 kindToken, // legacy: invalid access_token
	"42001":                 kindToken, // legacy: access_token expired
	"88":                    kindPermission,
	"60011":                 kindPermission, // legacy: no permission for this API
	"90018":                 kindRetry,      // legacy: too many calls
	"-1":                    kindRetry,      // legacy: system busy
}

type errorKind int

const (
	kindOther errorKind = iota
	kindToken
	kindPermission
	kindRetry
)

// kind classifies err.
func kind(err error) errorKind {
	var ae *APIError
	if !errors.As(err, &ae) {
		return kindRetry // transport: the platform may not have seen it
	}
	if k, ok := apiErrorKinds[ae.Code]; ok {
		return k
	}
	switch {
	case strings.HasPrefix(ae.Code, "Forbidden.AccessDenied"):
		return kindPermission
	case strings.HasPrefix(ae.Code, "Throttling"), ae.Status == http.StatusTooManyRequests, ae.Status >= 500:
		return kindRetry
	case ae.Status == http.StatusUnauthorized:
		return kindToken
	}
	return kindOther
}

// classify wraps err in channels.ErrPermanent unless retrying may help.
func classify(err error) error {
	switch kind(err) {
	case kindRetry, kindToken:
		return err
	}
	return fmt.Errorf("%w: %w", err, channels.ErrPermanent)
}

// tokenKey is the app's token in the shared cache.
func (a *api) tokenKey() string { return tokenKeyPrefix + a.appKey }

// fetchToken asks for a new app access token (once across replicas: the
// cache calls it under its lock).
func (a *api) fetchToken(ctx context.Context) (string, time.Duration, error) {
	var out struct {
		AccessToken string `json:"accessToken"`
		ExpireIn    int64  `json:"expireIn"` // seconds, 7200
	}
	body := map[string]string{"appKey": a.appKey, "appSecret": a.appSecret}
	if err := a.do(ctx, http.MethodPost, a.base+"/v1.0/oauth2/accessToken", nil, body, &out); err != nil {
		return "", 0, fmt.Errorf("dingtalk: access token of app %s: %w", a.appKey, err)
	}
	if out.AccessToken == "" {
		return "", 0, fmt.Errorf("dingtalk: access token of app %s: empty answer", a.appKey)
	}
	return out.AccessToken, time.Duration(out.ExpireIn) * time.Second, nil
}

// call does an OpenAPI request with the app token. When DingTalk says the
// token is invalid or expired (it may revoke one early), it drops that
// token from the shared cache, unless another replica already replaced
// it, and tries once more: the first request was refused, so the second
// cannot duplicate it.
func (a *api) call(ctx context.Context, method, path string, in, out any) error {
	return a.withToken(ctx, func(tok string) error {
		return a.do(ctx, method, a.base+path, http.Header{"X-Acs-Dingtalk-Access-Token": {tok}}, in, out)
	})
}

// callOAPI is call for the legacy API, whose answers carry errcode.
func (a *api) callOAPI(ctx context.Context, path string, in any, out any) error {
	return a.withToken(ctx, func(tok string) error {
		var raw json.RawMessage
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		if err := a.do(ctx, http.MethodPost, a.oapi+path+sep+"access_token="+url.QueryEscape(tok), nil, in, &raw); err != nil {
			return err
		}
		var head struct {
			ErrCode int    `json:"errcode"`
			ErrMsg  string `json:"errmsg"`
			SubCode string `json:"sub_code"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return fmt.Errorf("dingtalk: %s: answer: %w", path, err)
		}
		if head.ErrCode != 0 {
			// errcode 88 is a family; its sub_code says which (an expired
			// token, a missing permission).
			code := fmt.Sprint(head.ErrCode)
			if _, known := apiErrorKinds[head.SubCode]; known {
				code = head.SubCode
			}
			return &APIError{Status: http.StatusOK, Code: code, Message: head.ErrMsg}
		}
		return json.Unmarshal(raw, out)
	})
}

func (a *api) withToken(ctx context.Context, do func(tok string) error) error {
	tok, err := a.tokens.Token(ctx, a.tokenKey(), a.fetchToken)
	if err != nil {
		return err
	}
	err = do(tok)
	if kind(err) != kindToken {
		return err
	}
	if ierr := a.tokens.Invalidate(ctx, a.tokenKey(), tok); ierr != nil {
		return fmt.Errorf("dingtalk: drop expired token: %w", ierr)
	}
	if tok, err = a.tokens.Token(ctx, a.tokenKey(), a.fetchToken); err != nil {
		return err
	}
	return do(tok)
}

func isAPIError(err error) bool {
	var ae *APIError
	return errors.As(err, &ae)
}

// do sends one JSON request (or in as is, when a channels.Form). Errors from
// DingTalk are *APIError; transport errors never carry the URL, whose
// query may hold a token and whose path may be a session webhook.
func (a *api) do(ctx context.Context, method, u string, h http.Header, in, out any) error {
	return a.doWith(ctx, a.http, method, u, h, in, out)
}

// doWith is do through client (a session webhook's guarded client).
func (a *api) doWith(ctx context.Context, client *http.Client, method, u string, h http.Header, in, out any) error {
	body, contentType, err := encodeBody(in)
	if err != nil {
		return fmt.Errorf("dingtalk: encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("dingtalk: request: %w", redactURL(err))
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("dingtalk: %s %s: %w", method, req.URL.Path, redactURL(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("dingtalk: %s %s: read answer: %w", method, req.URL.Path, redactURL(err))
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Code, Message string }
		_ = json.Unmarshal(data, &e)
		if e.Code == "" {
			e.Message = strings.TrimSpace(string(data))
		}
		return &APIError{Status: resp.StatusCode, Code: e.Code, Message: e.Message}
	}
	if out == nil || len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("dingtalk: %s %s: answer: %w", method, req.URL.Path, err)
	}
	return nil
}

// redactURL drops the URL from a *url.Error, keeping what went wrong.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// permissionHint logs, for the operator, which permission a refused call
// needs; it is the message to act on, so it names the console page.
func (a *api) permissionHint(err error, permission string) {
	if kind(err) != kindPermission {
		return
	}
	a.log.Error("DingTalk refused a call for lack of a permission: grant it to the app in "+permissionConsoleMarker,
		"app_key", a.appKey, "permission", permission, "err", err)
}
