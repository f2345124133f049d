package feishu

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

var (
	_ channels.Doctor     = (*Channel)(nil)
	_ channels.SelfTester = (*Channel)(nil)
)

// doctorTimeout bounds each of the doctor's calls to Feishu.
const doctorTimeout = 10 * time.Second

// sendScope is the scope a bot needs to send messages (权限管理).
const sendScope = "im:message:send_as_bot"

// doctorFixes say what to change for the codes a bad setup meets.
var doctorFixes = map[int]string{
	10003:    "feishu.apps[].app_id and app_secret: copy them from 开发者后台 → the app → 凭证与基础信息",
	10014:    "feishu.apps[].app_secret: copy the App Secret from 开发者后台 → the app → 凭证与基础信息",
	99991661: "feishu.apps[].app_id and app_secret: the token was refused; copy both from 凭证与基础信息",
	99991663: "feishu.apps[].app_id and app_secret: the token was refused; copy both from 凭证与基础信息",
	99991672: "grant the scope named in the message (开发者后台 → 权限管理) and publish a new version",
	230013:   "add the user to the app's availability range (可用范围, 版本管理与发布) and publish a new version",
	234007:   "enable the bot capability (应用能力 → 机器人) and publish a new version",
}

// Check fetches a fresh tenant access token for every app (past the token
// cache, so a changed secret shows), reads the bot info (the bot
// capability is enabled) and, for an app in websocket mode, asks for a
// long-connection endpoint without connecting (a replica may hold it).
func (c *Channel) Check(ctx context.Context) []channels.Check {
	var out []channels.Check
	for _, name := range c.names() {
		a := c.apps[name]
		ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
		_, _, err := a.api.fetchToken(ctx)
		ck := channels.Check{Name: "feishu/" + name + ": tenant access token"}
		if err != nil {
			ck.Detail, ck.Fix = a.explainErr(err)
			out = append(out, ck)
			cancel()
			continue
		}
		ck.OK, ck.Detail = true, "token fetched (app_id, app_secret and domain are right)"
		out = append(out, ck, a.checkBot(ctx))
		if a.cfg.Mode == ModeWebSocket {
			out = append(out, a.checkEndpoint(ctx))
		}
		if a.cfg.Cards != nil && *a.cfg.Cards {
			out = append(out, a.checkCards())
		}
		cancel()
	}
	return out
}

func (a *App) checkBot(ctx context.Context) channels.Check {
	ck := channels.Check{Name: "feishu/" + a.cfg.Name + ": bot"}
	var info struct {
		Bot struct {
			OpenID string `json:"open_id"`
		} `json:"bot"`
	}
	if err := a.api.call(ctx, "bot/v3/info", http.MethodGet, "/open-apis/bot/v3/info", nil, nil, &info); err != nil {
		ck.Detail, ck.Fix = a.explainErr(err)
		return ck
	}
	if info.Bot.OpenID == "" {
		ck.Detail, ck.Fix = "bot info has no open_id", doctorFixes[234007]
		return ck
	}
	ck.OK, ck.Detail = true, "bot capability enabled"
	return ck
}

func (a *App) checkEndpoint(ctx context.Context) channels.Check {
	ck := channels.Check{Name: "feishu/" + a.cfg.Name + ": long connection"}
	var ep endpointAnswer
	body := map[string]string{"AppID": a.cfg.AppID, "AppSecret": a.cfg.AppSecret}
	if _, err := a.api.do(ctx, http.MethodPost, endpointPath, nil, "", body, &ep); err != nil {
		ck.Detail, ck.Fix = a.explainErr(err)
		return ck
	}
	if ep.Code != 0 || ep.Data.URL == "" {
		ck.Detail = fmt.Sprintf("endpoint: code %d: %s", ep.Code, redact(ep.Msg, a.cfg.AppSecret))
		ck.Fix = "enable 使用长连接接收事件 under 事件与回调 and check app_id and app_secret"
		return ck
	}
	ck.OK, ck.Detail = true, "endpoint handed out (not connected: a replica may hold the connection)"
	return ck
}

// checkCards says what to check for cards: Feishu's OpenAPI does not
// tell an app's callback subscriptions, so the doctor cannot see a
// missing card.action.trigger (ops.CheckCards sees its effect: cards
// answered, none tapped).
func (a *App) checkCards() channels.Check {
	return channels.Check{Name: "feishu/" + a.cfg.Name + ": cards", OK: true,
		Detail: "cards on: taps arrive only with 事件与回调 → 回调配置 → 卡片回传交互 (card.action.trigger) subscribed in " +
			a.cfg.Mode + " mode and a published version; a tap showing error 200340 means it is missing (or set cards: false)"}
}

// explainErr says what a failed call saw and what to change.
func (a *App) explainErr(err error) (detail, fix string) {
	e := apiErrorOf(err)
	if e == nil {
		return "Feishu API unreachable at " + a.api.base,
			"let this server reach " + a.api.base + " (firewall, proxy, DNS), or fix feishu.apps[].domain"
	}
	detail = fmt.Sprintf("%s: code %d: %s", e.Op, e.Code, redact(e.Msg, a.cfg.AppSecret))
	fix = doctorFixes[e.Code]
	if fix == "" {
		fix = lookupCode(e.Code).hint
	}
	return detail, fix
}

// SelfTest sends a test text from the app named account to target (an id
// of the app's id_type, or a chat id starting oc_) and explains Feishu's
// answer.
func (c *Channel) SelfTest(ctx context.Context, account, target string) (channels.SelfTestResult, error) {
	a, ok := c.apps[account]
	if !ok {
		return channels.SelfTestResult{}, fmt.Errorf("feishu: self-test: app %q: %w", account, channels.ErrUnknownAccount)
	}
	rt := replyTo{ChatID: target, ReceiveIDType: a.cfg.IDType}
	if strings.HasPrefix(target, "oc_") {
		rt.ReceiveIDType = "chat_id"
	}
	content := fmt.Sprintf(`{"text":%q}`, channels.SelfTestText)
	id, err := a.post(ctx, rt, "text", content, "")
	if err == nil {
		return channels.SelfTestResult{OK: true, Raw: fmt.Sprintf(`{"code":0,"msg":"success","message_id":%q}`, id),
			Explanation: "Feishu accepted the message: app_id, app_secret, bot capability, scope and availability range are right"}, nil
	}
	e := apiErrorOf(err)
	if e == nil {
		return channels.SelfTestResult{Raw: redact(err.Error(), a.cfg.AppSecret),
			Explanation: "Feishu did not answer: check that this server reaches " + a.api.base + " (egress, proxy, DNS)"}, nil
	}
	raw := fmt.Sprintf(`{"op":%q,"code":%d,"msg":%q}`, e.Op, e.Code, redact(e.Msg, a.cfg.AppSecret))
	return channels.SelfTestResult{Raw: raw, Explanation: explainSend(e)}, nil
}

// explainSend says which check a refused self-test message failed.
func explainSend(e *APIError) string {
	switch e.Code {
	case 230013:
		return "the user is outside the app's availability range: " + doctorFixes[230013]
	case 99991672, 99991676:
		return "the app lacks the scope " + sendScope + ": grant it in 开发者后台 → 权限管理 and publish a new version"
	case 99991661, 99991663, 10003, 10014:
		return "the credentials check failed: " + doctorFixes[e.Code]
	case 234007:
		return "the app has no bot: " + doctorFixes[234007]
	}
	return fmt.Sprintf("Feishu refused the message (code %d, %s): check that the target is an id of the app's id_type, or a chat id (oc_...)", e.Code, lookupCode(e.Code).what)
}

// redact removes secret from s.
func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "***")
}
