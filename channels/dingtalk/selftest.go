package dingtalk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

var _ channels.SelfTester = (*Channel)(nil)

// SelfTest sends a test text from the robot named account to the user id
// (staffId) target through the robot OpenAPI (oToMessages/batchSend) and
// explains DingTalk's answer.
func (c *Channel) SelfTest(ctx context.Context, account, target string) (channels.SelfTestResult, error) {
	r, ok := c.robots[account]
	if !ok {
		return channels.SelfTestResult{}, fmt.Errorf("dingtalk: self-test: robot %q: %w", account, channels.ErrUnknownAccount)
	}
	err := r.robotSend(ctx, replyTo{User: target}, "sampleText", map[string]string{"content": channels.SelfTestText})
	if err == nil {
		return channels.SelfTestResult{OK: true, Raw: `{"result":"sent"}`,
			Explanation: "DingTalk accepted the message: app_key, app_secret, robot code, permission and the user's range are right"}, nil
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		if !errors.Is(err, channels.ErrPermanent) {
			return channels.SelfTestResult{Raw: err.Error(),
				Explanation: "DingTalk did not answer: check that this server reaches " + r.cfg.APIBaseURL + " (egress, proxy, DNS)"}, nil
		}
		// robotSend's own refusal: the answer listed the user as invalid.
		return channels.SelfTestResult{Raw: err.Error(),
			Explanation: "the user id is not valid for this robot: use the user's userId (staffId) from 通讯录, and check the robot is published (已发布) and the user is in its visible range (可见范围)"}, nil
	}
	raw, _ := json.Marshal(map[string]any{"status": ae.Status, "code": ae.Code, "message": redact(ae.Message, r.cfg.AppSecret)})
	return channels.SelfTestResult{Raw: string(raw), Explanation: explainSend(ae)}, nil
}

// explainSend says which check a refused robot send failed.
func explainSend(ae *APIError) string {
	switch {
	case badCredentials(ae):
		return "the credentials check failed: set dingtalk.robots[].app_key and app_secret to the app's Client ID and Client Secret (开发者后台 → 凭证与基础信息)"
	case kind(ae) == kindPermission:
		return "the app lacks a permission: grant " + robotSendPermission + " in " + permissionConsoleMarker
	case ae.Code == "resource.not.found" || ae.Code == "robot.not.exist" || ae.Code == "invalidParameter.robotCode":
		return "the robot was not found: publish the robot (机器人 → 发布) and check dingtalk.robots[].robot_code"
	case ae.Code == "staffId.notExisted" || ae.Code == "invalidStaffId":
		return "the user is unknown or outside the robot's range: use the userId from 通讯录 and add the user to the app's 可见范围"
	}
	return fmt.Sprintf("DingTalk refused the message (%s): look the code up in DingTalk's error code list; check the robot is published and the user is in its range", ae.Code)
}
