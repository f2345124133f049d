package wecom

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

var _ channels.Doctor = (*Channel)(nil)

// doctorTimeout bounds each of the doctor's calls to WeCom.
const doctorTimeout = 10 * time.Second

// doctorFixes say what to change for the errcodes gettoken answers with a
// bad setup (WeCom's global error code list).
var doctorFixes = map[int64]string{
	40001: "wecom.apps[].secret: copy the app's Secret from the admin console (应用管理 → the app → Secret)",
	40013: "wecom.apps[].corp_id: copy the corp id from 我的企业 → 企业信息 → 企业ID",
	40056: "wecom.apps[].agent_id: copy the AgentId from 应用管理 → the app",
	60020: "add this server's public IP to the app's 企业可信IP (应用管理 → the app → 企业可信IP)",
}

// Check fetches a fresh access token for every app (past the token cache,
// so a changed secret shows), says what an app's cards need, and checks
// each AI bot's setup: callback
// bots' crypto keys were decoded when the config loaded; websocket bots'
// server must accept a TCP connection (no subscription is made: it would
// take the bot's one connection from a running replica).
func (c *Channel) Check(ctx context.Context) []channels.Check {
	var out []channels.Check
	for _, name := range sortedKeys(c.apps) {
		a := c.apps[name]
		out = append(out, a.checkToken(ctx))
		if a.cards {
			out = append(out, a.checkCards())
		}
	}
	for _, name := range sortedKeys(c.bots) {
		out = append(out, c.bots[name].Check(ctx))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// checkToken calls gettoken with the app's corp id and secret.
func (a *App) checkToken(ctx context.Context) channels.Check {
	ck := channels.Check{Name: "wecom/" + a.name + ": access token"}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	u := a.tokens.base + "/cgi-bin/gettoken?corpid=" + url.QueryEscape(a.corpID) + "&corpsecret=" + url.QueryEscape(a.secret)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		ck.Detail, ck.Fix = err.Error(), "wecom.apps[].api_base_url: an http(s) origin"
		return ck
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// The error names the URL, secret included: say only where.
		ck.Detail = "WeCom API unreachable at " + a.tokens.base
		ck.Fix = "let this server reach " + a.tokens.base + " (firewall, proxy, DNS), or fix wecom.apps[].api_base_url"
		return ck
	}
	defer resp.Body.Close()
	var body struct {
		ErrCode int64  `json:"errcode"`
		ErrMsg  string `json:"errmsg"`
		Token   string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		ck.Detail = fmt.Sprintf("HTTP %d, not a WeCom answer", resp.StatusCode)
		ck.Fix = "wecom.apps[].api_base_url must point at the WeCom API (default https://qyapi.weixin.qq.com)"
		return ck
	}
	if body.ErrCode != 0 || body.Token == "" {
		what := body.ErrMsg
		if info, ok := wxbiz.Known(body.ErrCode); ok {
			what = info.What
		}
		ck.Detail = fmt.Sprintf("gettoken: errcode %d: %s", body.ErrCode, wxbiz.Redact(what, a.secret))
		ck.Fix = doctorFixes[body.ErrCode]
		if ck.Fix == "" {
			ck.Fix = "look up the errcode in WeCom's global error code list (全局错误码)"
		}
		return ck
	}
	ck.OK, ck.Detail = true, "token fetched (corp id, agent secret and API base are right)"
	return ck
}

// checkCards says what an app's template cards need: WeCom's API does not
// tell an app's receive-message settings, so the doctor cannot see them
// (a card WeCom refuses falls back to text, counted in
// hermes_card_fallbacks_total).
func (a *App) checkCards() channels.Check {
	return channels.Check{Name: "wecom/" + a.name + ": cards", OK: true,
		Detail: "cards on: confirmations and choices are template cards whose clicks come to /wecom/" + a.name +
			"/callback; they need the app's receive-message URL (应用管理 → the app → 接收消息 → 设置API接收, with this" +
			" token and EncodingAESKey), without which WeCom sends no callback cards (set cards: false; typing 确认 works either way)"}
}
