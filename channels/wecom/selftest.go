package wecom

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

var _ channels.SelfTester = (*Channel)(nil)

// selfTestAdvice is what an operator does about the errcodes a first
// setup meets most, beyond the meaning in errcodes: the check that failed
// and where in the WeCom admin console to fix it.
var selfTestAdvice = map[int64]string{
	40001: "the app secret check failed: copy the Secret of this app (应用管理 → the app → Secret) into its env variable or file and restart",
	40013: "the corp id check failed: use the 企业ID from 我的企业 → 企业信息",
	40056: "the agent id check failed: use the AgentId shown on the app's page",
	48002: "the app lacks the API permission: grant it under 应用管理 → the app → 企业可信IP/API权限, or use an app that has it",
	60011: "the target is outside the app's visible range (可见范围): add the user or their department on the app's page",
	60020: "WeCom refused this server's IP: add the egress IP of every Hermes replica to the app's 企业可信IP list (应用管理 → the app → 企业可信IP)",
	40003: "the target user id does not exist in this corp: use the 账号 (UserID) from 通讯录, not the display name",
	81013: "the target user id does not exist or is not visible to the app",
}

// SelfTest sends a test text from the app named account to the user
// target and explains WeCom's answer. AI bots cannot start a conversation
// with a user, so they are refused with ErrUnknownAccount.
func (c *Channel) SelfTest(ctx context.Context, account, target string) (channels.SelfTestResult, error) {
	a, ok := c.apps[account]
	if !ok {
		return channels.SelfTestResult{}, fmt.Errorf("wecom: self-test: app %q: %w", account, channels.ErrUnknownAccount)
	}
	rt, _ := json.Marshal(appReplyTo{ToUser: target})
	res, err := a.Send(ctx, channels.Outbound{Account: account, ReplyTo: rt, Format: channels.FormatText,
		Text: channels.SelfTestText, Parts: 1, Key: "self-test"})
	if err == nil {
		raw, _ := json.Marshal(map[string]any{"errcode": 0, "errmsg": "ok", "msgid": res.MessageID})
		return channels.SelfTestResult{OK: true, Raw: string(raw),
			Explanation: "WeCom accepted the message: the secret, agent id, trusted IP list and visible range are right"}, nil
	}
	var apiErr *wxbiz.APIError
	if !errors.As(err, &apiErr) {
		return channels.SelfTestResult{Raw: err.Error(),
			Explanation: "WeCom did not answer: check that this server reaches the API base URL (egress, proxy, DNS)"}, nil
	}
	raw, _ := json.Marshal(map[string]any{"op": apiErr.Op, "errcode": apiErr.Code, "errmsg": apiErr.Message})
	info := wxbiz.LookupCode(apiErr.Code)
	explanation := info.What
	if advice := selfTestAdvice[apiErr.Code]; advice != "" {
		explanation += ": " + advice
	} else if h := info.Hint; h != "" {
		explanation += ": " + h
	}
	return channels.SelfTestResult{Raw: string(raw), Explanation: explanation}, nil
}
