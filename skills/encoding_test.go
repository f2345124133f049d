package skills_test

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hermes-gw/hermes/skills"
)

// ticketSkill takes a few arguments of different kinds and maps two names.
func ticketSkill(contentType string) *skills.Skill {
	return &skills.Skill{
		Name: "it_ticket_update", Description: "update a ticket", Endpoint: "/tickets/{ticketNo}/comments",
		ContentType: contentType,
		Parameters: json.RawMessage(`{"type":"object","properties":{"ticket_id":{"type":"string"},"text":{"type":"string"},` +
			`"tags":{"type":"array","items":{"type":"string"}},"urgent":{"type":"boolean"},"notify":{"type":"string"}}}`),
		ParameterMap: map[string]string{"ticket_id": "ticketNo", "text": "comment"},
		QueryParams:  []string{"notify"},
		Identity:     skills.IdentityConfig{HMACKeyEnv: "HR_HMAC"},
	}
}

const ticketArgs = `{"ticket_id":"INC 1/2","text":"屏幕闪 & 重启","tags":["hw","display"],"urgent":true,"notify":"lisi"}`

func TestHTTP_Encodings(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		decode      func(t *testing.T, r *http.Request, body string) url.Values
	}{
		{skills.ContentJSON, func(t *testing.T, r *http.Request, body string) url.Values {
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatalf("body %q: %v", body, err)
			}
			if tags, _ := m["tags"].([]any); len(tags) != 2 || m["urgent"] != true {
				t.Errorf("typed values lost: %s", body)
			}
			v := url.Values{}
			for k, x := range m {
				s, _ := x.(string)
				v.Set(k, s)
			}
			return v
		}},
		{skills.ContentForm, func(t *testing.T, r *http.Request, body string) url.Values {
			v, err := url.ParseQuery(body)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(v["tags"], ",") != "hw,display" || v.Get("urgent") != "true" {
				t.Errorf("form = %v", v)
			}
			return v
		}},
		{skills.ContentMultipart, func(t *testing.T, r *http.Request, body string) url.Values {
			_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil {
				t.Fatal(err)
			}
			form, err := multipart.NewReader(strings.NewReader(body), params["boundary"]).ReadForm(1 << 20)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(form.Value["tags"], ",") != "hw,display" || form.Value["urgent"][0] != "true" {
				t.Errorf("multipart = %v", form.Value)
			}
			return form.Value
		}},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			rec := &recorder{body: `{"ok":true}`}
			tool := bind(t, rec, ticketSkill(tc.contentType), zhang, secrets)
			if _, err := tool.Call(context.Background(), json.RawMessage(ticketArgs)); err != nil {
				t.Fatalf("Call: %v", err)
			}
			r, body := rec.reqs[0], rec.bodies[0]
			if !strings.HasPrefix(r.Header.Get("Content-Type"), tc.contentType) {
				t.Errorf("Content-Type = %q", r.Header.Get("Content-Type"))
			}
			// The path placeholder takes the mapped argument, escaped; the
			// query parameter leaves the body.
			if r.URL.EscapedPath() != "/api/tickets/INC%201%2F2/comments" || r.URL.Query().Get("notify") != "lisi" {
				t.Errorf("URL = %s", r.URL)
			}
			fields := tc.decode(t, r, body)
			if fields.Get("comment") != "屏幕闪 & 重启" || fields["ticket_id"] != nil || fields["text"] != nil || fields["notify"] != nil {
				t.Errorf("fields = %v, want comment mapped, ticket_id in the path, notify in the query", fields)
			}
		})
	}
}

func TestHTTP_TraceAndStatus(t *testing.T) {
	rec := &recorder{status: http.StatusNotFound, body: `{"found":false}`}
	s := hrSkill()
	s.SuccessStatus = []int{200, 404} // "not found" is an answer for this API
	tool := bind(t, rec, s, skills.Caller{UserID: "zhangsan", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}, secrets)
	res, err := tool.Call(context.Background(), json.RawMessage(`{"days":1}`))
	if err != nil || res.Status != 404 || res.Skill != "hr_leave_apply" {
		t.Fatalf("res = %+v, %v", res, err)
	}
	tp := rec.reqs[0].Header.Get("traceparent")
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || parts[0] != "00" || parts[1] != "4bf92f3577b34da6a3ce929d0e0e4736" || len(parts[2]) != 16 || parts[3] != "01" {
		t.Errorf("traceparent = %q, want the run's trace id and a span id", tp)
	}
	if got := skills.TraceID("run-42"); len(got) != 32 || got != skills.TraceID("run-42") {
		t.Errorf("TraceID(run-42) = %q, want 32 stable hex digits", got)
	}
}

func TestHTTP_AuthSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{body: "you sent file-secret"}
	s := hrSkill()
	s.Auth = &skills.Auth{Type: skills.AuthHeader, Header: "X-Api-Key", TokenFile: file}
	tool := bind(t, rec, s, zhang, secrets)
	res, err := tool.Call(context.Background(), json.RawMessage(`{"days":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.reqs[0].Header.Get("X-Api-Key"); got != "file-secret" || rec.reqs[0].Header.Get("Authorization") != "" {
		t.Errorf("X-Api-Key = %q", got)
	}
	if strings.Contains(string(res.Body), "file-secret") {
		t.Errorf("echoed secret reached the model: %s", res.Body)
	}
	os.Remove(file)
	_, err = tool.Call(context.Background(), json.RawMessage(`{"days":1}`))
	if !errors.Is(err, skills.ErrMisconfigured) || !strings.Contains(err.Error(), "auth.token_file") || rec.count() != 1 {
		t.Errorf("missing secret file: err = %v, calls %d", err, rec.count())
	}
}

func TestHTTP_ErrorsAs(t *testing.T) {
	rec := &recorder{status: 409, body: `{"error":"已有同名工单"}`}
	tool := bind(t, rec, hrSkill(), zhang, secrets)
	_, err := tool.Call(context.Background(), json.RawMessage(`{"days":1}`))
	var he *skills.HTTPError
	if !errors.As(err, &he) || he.Status != 409 || !strings.Contains(he.Body, "已有同名工单") || !errors.Is(err, skills.ErrRefused) {
		t.Errorf("err = %v, want *HTTPError 409 wrapped with ErrRefused", err)
	}
}

// TestHTTP_PathParamDotSegments: "." and ".." pass url.PathEscape and
// would turn /tickets/{ticketNo}/comments into a sibling endpoint once a
// proxy normalises the path; an empty value drops the segment.
func TestHTTP_PathParamDotSegments(t *testing.T) {
	for _, id := range []string{"..", ".", ""} {
		t.Run(strconv.Quote(id), func(t *testing.T) {
			rec := &recorder{}
			tool := bind(t, rec, ticketSkill(skills.ContentJSON), zhang, secrets)
			_, err := tool.Call(context.Background(), json.RawMessage(`{"ticket_id":`+strconv.Quote(id)+`,"text":"x"}`))
			if !errors.Is(err, skills.ErrInvalidArguments) || !strings.Contains(err.Error(), "ticketNo") {
				t.Errorf("err = %v, want ErrInvalidArguments naming ticketNo", err)
			}
			if rec.count() != 0 {
				t.Errorf("backend called at %s", rec.reqs[0].URL.Path)
			}
		})
	}
	rec := &recorder{}
	tool := bind(t, rec, ticketSkill(skills.ContentJSON), zhang, secrets)
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"ticket_id":"../status","text":"x"}`)); err != nil {
		t.Fatalf("a value with a slash is escaped, not refused: %v", err)
	}
	if got := rec.reqs[0].URL.EscapedPath(); got != "/api/tickets/..%2Fstatus/comments" {
		t.Errorf("path = %s", got)
	}
}
