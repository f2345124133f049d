package demobackend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/skills/demobackend"
)

var (
	key = []byte("demo-key")
	now = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
)

// audiences are the skills the demo backend's endpoints serve.
var audiences = map[string]string{
	"/hr/leave-balance": "hr_leave_balance", "/hr/policies/search": "hr_policy_search", "/hr/payslip": "hr_payslip_summary",
	"/it/tickets": "it_ticket_create", "/it/tickets/status": "it_ticket_status", "/it/password/reset": "it_password_reset",
	"/it/vpn/access": "it_vpn_access", "/hr/salary": "hr_salary",
}

var nonce int

// sign signs r (with body) as Hermes would for user, with signer.
func sign(r *http.Request, user, body string, signer func(sr skills.SignedRequest) string) {
	nonce++
	sr := skills.SignedRequest{Method: r.Method, Host: r.Host, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
		BodySHA256: skills.BodySHA256([]byte(body)), Nonce: fmt.Sprintf("nonce-%d", nonce), Audience: audiences[r.URL.Path],
		Identity: skills.SignedIdentity{UserID: user, Channel: "console", Timestamp: now.Unix()}}
	r.Header.Set(skills.HeaderUserID, user)
	r.Header.Set(skills.HeaderChannel, "console")
	r.Header.Set(skills.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	r.Header.Set(skills.HeaderNonce, sr.Nonce)
	r.Header.Set(skills.HeaderSignature, signer(sr))
}

// post sends a request signed as user (unsigned when user is "").
func post(b *demobackend.Backend, path, user, body string, signer func(sr skills.SignedRequest) string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if user != "" {
		sign(r, user, body, signer)
	}
	w := httptest.NewRecorder()
	b.ServeHTTP(w, r)
	return w
}

func good(sr skills.SignedRequest) string { return sr.Sign(key) }

func newBackend() *demobackend.Backend { return demobackend.New(key, func() time.Time { return now }) }

func TestBackend_AnswersForTheSignedUser(t *testing.T) {
	for _, tc := range []struct{ user, want string }{
		{"zhangsan", "张三 2026 年年假共 10 天，已用 5 天，剩余 5 天"},
		{"lisi", "李四 2026 年年假共 15 天，已用 3 天，剩余 12 天"},
		{"wangwu", "剩余 0 天"},
	} {
		t.Run(tc.user, func(t *testing.T) {
			b := newBackend()
			// The body names someone else: it must not matter.
			w := post(b, "/hr/leave-balance", tc.user, `{"user_id":"lisi","employee_id":"lisi"}`, good)
			if w.Code != 200 || !strings.Contains(w.Body.String(), tc.want) {
				t.Fatalf("got %d %s, want %q", w.Code, w.Body, tc.want)
			}
			var got struct {
				UserID string `json:"user_id"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.UserID != tc.user {
				t.Errorf("user_id = %q, want %q", got.UserID, tc.user)
			}
			calls := b.Calls()
			if len(calls) != 1 || calls[0].Identity.UserID != tc.user || !strings.Contains(calls[0].Body, "lisi") {
				t.Errorf("calls = %+v", calls)
			}
		})
	}
}

func TestBackend_RefusesBadIdentity(t *testing.T) {
	for _, tc := range []struct {
		name string
		user string
		sign func(skills.SignedRequest) string
		want string
	}{
		{"Unsigned", "", nil, "缺少身份签名"},
		{"WrongKey", "zhangsan", func(sr skills.SignedRequest) string { return sr.Sign([]byte("guess")) }, "签名无效"},
		{"SignedForSomeoneElse", "zhangsan", func(sr skills.SignedRequest) string {
			sr.Identity.UserID = "lisi"
			return sr.Sign(key)
		}, "签名无效"},
		{"SignedForAnotherSkill", "zhangsan", func(sr skills.SignedRequest) string {
			sr.Audience = "it_password_reset"
			return sr.Sign(key)
		}, "签名无效"},
		{"SignedForAnotherBody", "zhangsan", func(sr skills.SignedRequest) string {
			sr.BodySHA256 = skills.BodySHA256([]byte(`{"user_id":"lisi"}`))
			return sr.Sign(key)
		}, "签名无效"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend()
			w := post(b, "/hr/leave-balance", tc.user, `{}`, tc.sign)
			if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), tc.want) {
				t.Errorf("got %d %s, want 401 %q", w.Code, w.Body, tc.want)
			}
			if n := len(b.Calls()); n != 0 {
				t.Errorf("recorded %d calls for a refused request", n)
			}
		})
	}
}

func TestBackend_ExpiredSignature(t *testing.T) {
	b := demobackend.New(key, func() time.Time { return now.Add(10 * time.Minute) })
	w := post(b, "/hr/leave-balance", "zhangsan", `{}`, good)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "签名已过期") {
		t.Errorf("got %d %s, want 401 expired", w.Code, w.Body)
	}
}

func TestBackend_Tickets(t *testing.T) {
	b := newBackend()
	if w := post(b, "/it/tickets/status", "zhangsan", `{"ticket_id":"inc-1001"}`, good); w.Code != 200 || !strings.Contains(w.Body.String(), "处理中") {
		t.Errorf("own ticket: %d %s", w.Code, w.Body)
	}
	if w := post(b, "/it/tickets/status", "zhangsan", `{"ticket_id":"INC-1002"}`, good); w.Code != http.StatusForbidden {
		t.Errorf("lisi's ticket: %d %s, want 403", w.Code, w.Body)
	}
	if w := post(b, "/it/tickets/status", "zhangsan", `{"ticket_id":"INC-9999"}`, good); w.Code != http.StatusNotFound {
		t.Errorf("unknown ticket: %d %s, want 404", w.Code, w.Body)
	}
	w := post(b, "/it/tickets", "lisi", `{"title":"邮箱满了","description":"收不到邮件","user_id":"zhangsan"}`, good)
	if w.Code != http.StatusCreated || !strings.Contains(w.Body.String(), `"owner":"lisi"`) || !strings.Contains(w.Body.String(), "INC-1004") {
		t.Fatalf("create: %d %s, want INC-1004 owned by the signed user", w.Code, w.Body)
	}
	if w := post(b, "/it/tickets/status", "zhangsan", `{"ticket_id":"INC-1004"}`, good); w.Code != http.StatusForbidden {
		t.Errorf("zhangsan reading lisi's new ticket: %d, want 403", w.Code)
	}
	if w := post(b, "/it/tickets", "lisi", `{"description":"no title"}`, good); w.Code != http.StatusBadRequest {
		t.Errorf("create without title: %d, want 400", w.Code)
	}
}

func TestBackend_Policies(t *testing.T) {
	b := newBackend()
	w := post(b, "/hr/policies/search", "wangwu", `{"query":"报销要什么材料"}`, good)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "差旅与费用报销制度") || strings.Contains(w.Body.String(), "年假管理办法") {
		t.Errorf("search: %d %s", w.Code, w.Body)
	}
	w = post(b, "/hr/policies/search", "wangwu", `{"query":"食堂菜单"}`, good)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "没有找到") {
		t.Errorf("no hits: %d %s", w.Code, w.Body)
	}
}

func TestBackend_Routing(t *testing.T) {
	b := newBackend()
	if w := post(b, "/hr/salary", "zhangsan", `{}`, good); w.Code != http.StatusNotFound {
		t.Errorf("unknown path: %d", w.Code)
	}
	r := httptest.NewRequest(http.MethodGet, "/hr/leave-balance", nil)
	w := httptest.NewRecorder()
	b.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d, want 405", w.Code)
	}
}

func TestBackend_Payslip(t *testing.T) {
	b := newBackend()
	if w := post(b, "/hr/payslip", "zhangsan", `{"month":"2026-02"}`, good); w.Code != 200 || !strings.Contains(w.Body.String(), "实发 15368 元") {
		t.Errorf("own payslip: %d %s", w.Code, w.Body)
	}
	if w := post(b, "/hr/payslip", "zhangsan", `{}`, good); !strings.Contains(w.Body.String(), "2026-02") {
		t.Errorf("default month: %s, want last month", w.Body)
	}
	w := post(b, "/hr/payslip", "zhangsan", `{"employee_id":"lisi"}`, good)
	if w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), "22000") {
		t.Errorf("someone else's payslip: %d %s, want 403 without figures", w.Code, w.Body)
	}
}

func TestBackend_PasswordResetTakesAForm(t *testing.T) {
	b := newBackend()
	r := httptest.NewRequest(http.MethodPost, "/it/password/reset", strings.NewReader("target_system=vpn"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sign(r, "lisi", "target_system=vpn", good)
	w := httptest.NewRecorder()
	b.ServeHTTP(w, r)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "已重置李四的 VPN 密码") || w.Header().Get(skills.HeaderExecutionTime) == "" {
		t.Errorf("reset: %d %s %v", w.Code, w.Body, w.Header())
	}
	if w := post(b, "/it/password/reset", "lisi", `{"target_system":"vpn"}`, good); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("JSON body: %d, want 415", w.Code)
	}
}

func TestBackend_VPNIsAsync(t *testing.T) {
	var got []skills.AsyncCallback
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cb, err := skills.VerifyCallback(r, path.Base(r.URL.Path), key, now, 0)
		if err != nil {
			t.Errorf("callback: %v", err)
		}
		got = append(got, cb)
	}))
	t.Cleanup(gateway.Close)
	b := newBackend()
	if w := post(b, "/it/vpn/access", "wangwu", `{"reason":"出差","days":7}`, good); w.Code != http.StatusBadRequest {
		t.Errorf("without a callback URL: %d, want 400", w.Code)
	}
	r := httptest.NewRequest(http.MethodPost, "/it/vpn/access", strings.NewReader(`{"reason":"出差","days":7}`))
	sign(r, "wangwu", `{"reason":"出差","days":7}`, good)
	r.Header.Set(skills.HeaderCallbackURL, gateway.URL+"/v1/async/tok")
	w := httptest.NewRecorder()
	b.ServeHTTP(w, r)
	if w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), `"task_id":"VPN-1001"`) {
		t.Fatalf("accept: %d %s", w.Code, w.Body)
	}
	if len(got) != 0 || len(b.Pending()) != 1 {
		t.Fatalf("reported before CompleteAsync")
	}
	if err := b.CompleteAsync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].TaskID != "VPN-1001" || got[0].Status != skills.AsyncSucceeded || !strings.Contains(got[0].Message, "王五") {
		t.Errorf("callbacks = %+v", got)
	}
	if len(b.Pending()) != 0 {
		t.Errorf("still pending: %v", b.Pending())
	}
}

func TestBackend_CallbackFailureKeepsTask(t *testing.T) {
	b := demobackend.NewWithOptions(demobackend.Options{HMACKey: key, Now: func() time.Time { return now }})
	r := httptest.NewRequest(http.MethodPost, "/it/vpn/access", strings.NewReader(`{"reason":"出差","days":1}`))
	sign(r, "lisi", `{"reason":"出差","days":1}`, good)
	r.Header.Set(skills.HeaderCallbackURL, "http://127.0.0.1:1/unreachable")
	b.ServeHTTP(httptest.NewRecorder(), r)
	if err := b.CompleteAsync(context.Background()); err == nil || len(b.Pending()) != 1 {
		t.Errorf("err = %v, pending %v; want the task kept for the next try", err, b.Pending())
	}
}

// TestBackend_RefusesReplayedNonce: the same signed request twice within
// the window is refused the second time.
func TestBackend_RefusesReplayedNonce(t *testing.T) {
	b := newBackend()
	send := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/hr/leave-balance", strings.NewReader(`{}`))
		sign(r, "zhangsan", `{}`, good)
		r.Header.Set(skills.HeaderNonce, "same-nonce")
		sr := skills.SignedRequest{Method: "POST", Host: r.Host, Path: "/hr/leave-balance", BodySHA256: skills.BodySHA256([]byte(`{}`)),
			Nonce: "same-nonce", Audience: "hr_leave_balance", Identity: skills.SignedIdentity{UserID: "zhangsan", Channel: "console", Timestamp: now.Unix()}}
		r.Header.Set(skills.HeaderSignature, sr.Sign(key))
		w := httptest.NewRecorder()
		b.ServeHTTP(w, r)
		return w
	}
	if w := send(); w.Code != 200 {
		t.Fatalf("first: %d %s", w.Code, w.Body)
	}
	if w := send(); w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "重复的请求") {
		t.Errorf("replay: %d %s, want 401 重复的请求", w.Code, w.Body)
	}
}
