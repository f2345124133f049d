package demobackend

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/hermes-gw/hermes/skills"
)

// resetSystems are the accounts the password reset knows, by the API's
// name (the sample skill maps the model's "system" to "target_system").
var resetSystems = map[string]string{"vpn": "VPN", "email": "邮箱", "oa": "OA"}

// resetPassword resets the signed user's own password. The body is
// form-encoded (target_system=vpn), as many older IT systems want.
func (b *Backend) resetPassword(r request) (int, any) {
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/x-www-form-urlencoded") {
		return http.StatusUnsupportedMediaType, errorBody{"需要 application/x-www-form-urlencoded"}
	}
	form, err := url.ParseQuery(string(r.body))
	if err != nil {
		return http.StatusBadRequest, errorBody{"表单格式错误"}
	}
	system, ok := resetSystems[form.Get("target_system")]
	if !ok {
		return http.StatusBadRequest, errorBody{"target_system 只能是 vpn、email 或 oa"}
	}
	u, ok := findUser(r.id.UserID)
	if !ok {
		return http.StatusNotFound, errorBody{fmt.Sprintf("没有找到员工 %s 的账号", r.id.UserID)}
	}
	return http.StatusOK, map[string]any{"user_id": u.ID, "system": form.Get("target_system"),
		"summary": fmt.Sprintf("已重置%s的 %s 密码，临时密码已通过短信发送到本人手机，首次登录需修改。", u.Name, system)}
}

// firstVPNTask numbers VPN access tasks.
const firstVPNTask = 1001

// pendingTask is accepted VPN work waiting to be reported.
type pendingTask struct {
	TaskID      string
	CallbackURL string
	User        User
	Days        int
}

// requestVPN accepts a VPN access request for the signed user and answers
// 202 at once; the result goes later to X-Hermes-Callback-URL (see
// CompleteAsync), as approval in a real company takes a while.
func (b *Backend) requestVPN(r request) (int, any) {
	var args struct {
		Reason string `json:"reason"`
		Days   int    `json:"days"`
	}
	if err := decodeArgs(r.body, &args); err != nil || strings.TrimSpace(args.Reason) == "" {
		return http.StatusBadRequest, errorBody{"需要 reason：申请 VPN 的原因"}
	}
	if !slices.Contains([]int{1, 7, 30}, args.Days) {
		return http.StatusBadRequest, errorBody{"days 只能是 1、7 或 30"}
	}
	callback := r.header.Get(skills.HeaderCallbackURL)
	if u, err := url.Parse(callback); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return http.StatusBadRequest, errorBody{"异步接口需要 X-Hermes-Callback-URL"}
	}
	user, ok := findUser(r.id.UserID)
	if !ok {
		return http.StatusNotFound, errorBody{fmt.Sprintf("没有找到员工 %s", r.id.UserID)}
	}
	b.mu.Lock()
	task := pendingTask{TaskID: fmt.Sprintf("VPN-%d", b.nextVPN), CallbackURL: callback, User: user, Days: args.Days}
	b.nextVPN++
	b.pending = append(b.pending, task)
	b.mu.Unlock()
	b.scheduleAutoComplete()
	return http.StatusAccepted, map[string]any{"task_id": task.TaskID, "status": "accepted",
		"summary": fmt.Sprintf("VPN 权限申请 %s 已提交审批，结果稍后通知。", task.TaskID)}
}
