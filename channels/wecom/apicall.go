package wecom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/silenceper/wechat/v2/util"

	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// callJSON POSTs req as JSON to the API at path (e.g.
// "message/update_template_card", under /cgi-bin/) with the app's access
// token, for the calls silenceper/wechat does not have; what names the
// call in errors ("update card 9f2c"). An invalidated
// token is refreshed once (refreshOnce); ctx bounds the call, and so does
// the API client's timeout.
//
// Errors are callError's: they wrap channels.ErrPermanent for WeCom's
// permanent errcodes and *wxbiz.APIError when WeCom answered.
func (a *App) callJSON(ctx context.Context, path, what string, req any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("wecom: app %q: %s: %s: %w", a.name, what, path, err)
	}
	_, err = refreshOnce(a, func() (struct{}, error) { return struct{}{}, a.postJSON(ctx, path, body) })
	if err != nil {
		return a.callError(path, err, what)
	}
	return nil
}

// postJSON is one POST of callJSON. WeCom's errcode comes back as
// silenceper's *util.CommonError, which refreshOnce and callError read.
func (a *App) postJSON(ctx context.Context, path string, body []byte) error {
	token, err := a.message.GetAccessToken()
	if err != nil {
		return err // silenceper's gettoken error: apiErrorOf reads it
	}
	u := a.tokens.base + "/cgi-bin/" + path + "?" + url.Values{"access_token": {token}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := util.DefaultHTTPClient.Do(req) // installAPIBase's client, with its timeout
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL holds the token
		}
		if ctx.Err() != nil {
			return ctxDoneError{ctx.Err()}
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	data, err := wxbiz.ReadLimited(resp.Body, wxbiz.MaxCallbackBytes)
	if err != nil {
		return err
	}
	var ce util.CommonError
	if err := json.Unmarshal(data, &ce); err != nil {
		return fmt.Errorf("answer is not WeCom's JSON: %v", err)
	}
	if ce.ErrCode != 0 {
		return &ce
	}
	return nil
}
