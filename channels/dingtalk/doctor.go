package dingtalk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

var _ channels.Doctor = (*Channel)(nil)

// doctorTimeout bounds each of the doctor's calls to DingTalk.
const doctorTimeout = 10 * time.Second

// Check fetches a fresh access token for every robot (past the token
// cache, so a changed secret shows) and, for a robot in stream mode, opens
// a stream endpoint: that checks the credentials and the stream
// subscription without holding a connection (the ticket is never used).
func (c *Channel) Check(ctx context.Context) []channels.Check {
	names := make([]string, 0, len(c.robots))
	for name := range c.robots {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []channels.Check
	for _, name := range names {
		r := c.robots[name]
		token := r.checkToken(ctx)
		out = append(out, token)
		if r.cfg.Mode == ModeStream || r.cardsOn() { // http mode's taps come over a stream too
			out = append(out, r.checkStream(ctx))
		}
		if token.OK { // the card probe needs a token
			out = append(out, r.checkCards(ctx))
		}
	}
	return out
}

// doctorProbeTrack is the outTrackId the doctor's probe update names: no
// card has it, so the update changes nothing, and DingTalk's refusal says
// whether the app may write card instances at all.
const doctorProbeTrack = cardTrackPrefix + "doctor-probe"

// checkCards says whether confirmations are asked with button cards and
// what is missing: the template id (taps come over a stream connection in
// either mode, its card topic subscribed by the connection checkStream
// opened), the permission Card.Instance.Write
// (probed with an update of a card that does not exist).
func (r *robot) checkCards(ctx context.Context) channels.Check {
	ck := channels.Check{Name: "dingtalk/" + r.cfg.Name + ": button cards"}
	switch {
	case r.cfg.ButtonCardTemplateID == "":
		ck.OK, ck.Detail = true, "off (no button_card_template_id): confirmations are typed 「确认」; "+
			"to ask with buttons, publish a template in 卡片平台 for this app (README, \"Confirmation and choice cards\") and set button_card_template_id"
		return ck
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	probe := map[string]any{"outTrackId": doctorProbeTrack, "cardData": map[string]any{"cardParamMap": map[string]string{}}}
	// Any answer but a refused permission (the probe's card does not
	// exist) says the app may write card instances.
	err := r.api.call(ctx, http.MethodPut, "/v1.0/card/instances", probe, nil)
	switch {
	case err != nil && kind(err) == kindPermission:
		ck.Detail, _ = r.explainSetup(err)
		ck.Fix = "grant " + cardInstancePermission + " in " + permissionConsoleMarker + ", then publish a new version"
		return ck
	case err != nil && !isAPIError(err):
		ck.Detail, ck.Fix = r.explainSetup(err)
		return ck
	}
	ck.OK, ck.Detail = true, "on: template "+r.cfg.ButtonCardTemplateID+", taps on the stream's card topic "+cardTopic+
		", "+cardInstancePermission+" granted; the template must be published in 卡片平台 and belong to this app (a card of another app calls back to that app only)"
	return ck
}

func (r *robot) checkToken(ctx context.Context) channels.Check {
	ck := channels.Check{Name: "dingtalk/" + r.cfg.Name + ": access token"}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	if _, _, err := r.api.fetchToken(ctx); err != nil {
		ck.Detail, ck.Fix = r.explainSetup(err)
		return ck
	}
	ck.OK, ck.Detail = true, "token fetched (app_key, app_secret and API base are right)"
	return ck
}

func (r *robot) checkStream(ctx context.Context) channels.Check {
	ck := channels.Check{Name: "dingtalk/" + r.cfg.Name + ": stream"}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	if _, err := r.openConnection(ctx); err != nil {
		ck.Detail, ck.Fix = r.explainSetup(err)
		if isAPIError(err) && ck.Fix == "" {
			ck.Fix = "enable Stream mode for the robot (开发者后台 → the app → 机器人 → 消息接收模式: Stream 模式)"
		}
		return ck
	}
	ck.OK, ck.Detail = true, "stream endpoint opened (not connected: replicas hold the connections)"
	return ck
}

// explainSetup says what a failed token or stream call saw and which key
// fixes it. Errors never carry the secret (do drops URLs; bodies hold
// only the app key).
func (r *robot) explainSetup(err error) (detail, fix string) {
	var ae *APIError
	if !errors.As(err, &ae) {
		return "DingTalk API unreachable at " + r.cfg.APIBaseURL,
			"let this server reach " + r.cfg.APIBaseURL + " (firewall, proxy, DNS), or fix dingtalk.robots[].api_base_url"
	}
	detail = fmt.Sprintf("HTTP %d %s: %s", ae.Status, ae.Code, redact(ae.Message, r.cfg.AppSecret))
	switch {
	case badCredentials(ae):
		fix = "dingtalk.robots[].app_key and app_secret: copy the Client ID and Client Secret from 开发者后台 → the app → 凭证与基础信息"
	case kind(err) == kindPermission:
		fix = "grant the app the permission in " + permissionConsoleMarker
	}
	return detail, fix
}

// badCredentials reports an answer to a wrong app key or secret.
func badCredentials(ae *APIError) bool {
	c := strings.ToLower(ae.Code)
	return strings.Contains(c, "clientid") || strings.Contains(c, "appkey") || strings.Contains(c, "appsecret") ||
		ae.Code == "InvalidAuthentication" || ae.Status == 401
}

// redact removes secret from s.
func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "***")
}
