package dingtalk

import (
	"context"
	"errors"
	"fmt"
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
		out = append(out, r.checkToken(ctx))
		if r.cfg.Mode == ModeStream {
			out = append(out, r.checkStream(ctx))
		}
	}
	return out
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
