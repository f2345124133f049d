package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// httpTimeout bounds one OpenAPI call.
const httpTimeout = 10 * time.Second

// maxResponseBytes bounds an OpenAPI answer; they are a few KiB.
const maxResponseBytes = 1 << 20

// APIError is a non-zero code from the Feishu OpenAPI. Errors returned by
// Send and the directory wrap it when Feishu answered; test with errors.As.
type APIError struct {
	Op     string // e.g. "im/v1/messages/reply"
	Status int    // HTTP status
	Code   int    // Feishu code
	Msg    string // Feishu msg
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s: HTTP %d, code %d: %s", e.Op, e.Status, e.Code, e.Msg)
}

// codeAction says what a caller does with a code.
type codeAction int

const (
	actRetry        codeAction = iota // transient: try again later
	actRefreshToken                   // drop the cached token, fetch a new one, call once more
	actPermanent                      // the same call fails again: wraps channels.ErrPermanent
)

type codeInfo struct {
	what   string
	action codeAction
	hint   string // for the operator, logged at error level
}

// codes are the Feishu codes Hermes acts on, from the general error code
// list (通用错误码) and the IM and CardKit APIs; the token codes are those the
// official SDK refreshes on. Unknown codes are transient: the delivery
// layer's retry budget bounds the cost of a code not seen before.
var codes = map[int]codeInfo{
	99991663: {"tenant access token invalid", actRefreshToken, ""},
	99991664: {"app access token invalid", actRefreshToken, ""},
	99991671: {"access token invalid", actRefreshToken, ""},
	99991400: {"request rate limit reached", actRetry, ""},
	230020:   {"message rate limit reached", actRetry, ""},
	10003:    {"invalid app_id or app_secret", actPermanent, "check feishu app_id and app_secret in the Hermes configuration"},
	10014:    {"app secret invalid", actPermanent, "check feishu app_secret in the Hermes configuration"},
	99991672: {"the app lacks a permission scope", actPermanent, "grant the scope named in the message (开发者后台 → 权限管理) and publish a new version"},
	230002:   {"the bot is not in the chat", actPermanent, ""},
	41050:    {"the user is outside the app's contact range", actPermanent, "widen 权限管理 → 通讯录权限范围 if department rules must apply to this user"},
	230011:   {"the message to reply to was withdrawn", actPermanent, ""},
	230099:   {"message content rejected", actPermanent, ""},
	234001:   {"image upload: invalid request", actPermanent, ""},
	234006:   {"image larger than Feishu allows", actPermanent, ""},
	234007:   {"the app has no bot", actPermanent, "enable the bot capability (应用能力 → 机器人) and publish a new version"},
	234010:   {"empty image", actPermanent, ""},
}

func lookupCode(code int) codeInfo {
	if info, ok := codes[code]; ok {
		return info
	}
	return codeInfo{what: "Feishu error", action: actRetry}
}

// api is one app's OpenAPI client. Tokens live in the shared token cache,
// so every replica uses (and refreshes) the same tenant access token.
type api struct {
	base      string
	appID     string
	appSecret string
	tokens    channels.TokenCache
	client    *http.Client
}

// tokenKey is the token cache key of the app's tenant access token.
func (a *api) tokenKey() string { return "feishu:tenant_access_token:" + a.base + ":" + a.appID }

// token returns the tenant access token, fetching it once across replicas.
func (a *api) token(ctx context.Context) (string, error) {
	return a.tokens.Token(ctx, a.tokenKey(), a.fetchToken)
}

// fetchToken calls tenant_access_token/internal. Feishu returns the same
// token until 30 minutes before it expires, so the cache keeps it for
// expire minus that margin and the next fetch gets a new one.
func (a *api) fetchToken(ctx context.Context) (string, time.Duration, error) {
	var out struct {
		Code   int    `json:"code"`
		Msg    string `json:"msg"`
		Token  string `json:"tenant_access_token"`
		Expire int    `json:"expire"`
	}
	body := map[string]string{"app_id": a.appID, "app_secret": a.appSecret}
	status, err := a.do(ctx, http.MethodPost, "/open-apis/auth/v3/tenant_access_token/internal", nil, "", body, &out)
	if err != nil {
		return "", 0, fmt.Errorf("feishu: tenant_access_token: %w", err)
	}
	if out.Code != 0 || out.Token == "" {
		return "", 0, wrapCode(&APIError{Op: "auth/v3/tenant_access_token", Status: status, Code: out.Code, Msg: out.Msg})
	}
	ttl := time.Duration(out.Expire)*time.Second - 30*time.Minute
	return out.Token, max(ttl, time.Minute), nil
}

// call makes an authorised OpenAPI call and decodes the answer into out
// (the whole body; Feishu puts most results under "data"). When Feishu
// says the token is invalid or expired, the token is dropped from the
// shared cache (only if no replica replaced it yet) and the call made once
// more: Feishu refused the first, so the second cannot duplicate it.
//
// Errors wrap *APIError when Feishu answered a non-zero code, and
// channels.ErrPermanent for codes that retrying cannot fix.
func (a *api) call(ctx context.Context, op, method, path string, query url.Values, body, out any) error {
	for attempt := 0; ; attempt++ {
		tok, err := a.token(ctx)
		if err != nil {
			return err
		}
		var env struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
		}
		raw := json.RawMessage{}
		status, err := a.do(ctx, method, path, query, tok, body, &raw)
		if err != nil {
			return fmt.Errorf("feishu: %s: %w", op, err)
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			return fmt.Errorf("feishu: %s: HTTP %d, undecodable answer: %v", op, status, err)
		}
		if env.Code == 0 {
			if out != nil {
				if err := json.Unmarshal(raw, out); err != nil {
					return fmt.Errorf("feishu: %s: %w: %v", op, ErrMalformed, err)
				}
			}
			return nil
		}
		apiErr := &APIError{Op: op, Status: status, Code: env.Code, Msg: env.Msg}
		if lookupCode(env.Code).action == actRefreshToken && attempt == 0 {
			if err := a.tokens.Invalidate(ctx, a.tokenKey(), tok); err != nil {
				return fmt.Errorf("feishu: %s: drop stale token: %w", op, err)
			}
			continue
		}
		return wrapCode(apiErr)
	}
}

// wrapCode adds ErrPermanent to a code no retry can fix.
func wrapCode(e *APIError) error {
	if lookupCode(e.Code).action == actPermanent {
		return fmt.Errorf("feishu: %w: %w", e, channels.ErrPermanent)
	}
	return fmt.Errorf("feishu: %w", e)
}

// do sends one JSON request (or body as is, when a channels.Form). Any HTTP
// status with a JSON body is returned
// for the caller to read the code (Feishu answers 400 with a code, too);
// a body that is not JSON is an error.
func (a *api) do(ctx context.Context, method, path string, query url.Values, token string, body, out any) (int, error) {
	var rd io.Reader
	contentType := ""
	if body != nil {
		b, ct, err := encodeBody(body)
		if err != nil {
			return 0, err
		}
		rd, contentType = bytes.NewReader(b), ct
	}
	u := a.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return resp.StatusCode, err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("HTTP %d: not JSON: %w", resp.StatusCode, err)
	}
	return resp.StatusCode, nil
}

// marshalJSON encodes v without HTML escaping: Feishu shows "<" and "&"
// as sent, and message content is a JSON string inside JSON.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// apiErrorOf returns the *APIError in err, or nil.
func apiErrorOf(err error) *APIError {
	var e *APIError
	if errors.As(err, &e) {
		return e
	}
	return nil
}
