package skillfiles_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/skillfiles"
	"github.com/hermes-gw/hermes/skills"
)

// formBackend is an HR backend whose skill takes files: it fetches every
// URL of X-Hermes-Files while answering the call.
type formBackend struct {
	mu      sync.Mutex
	urls    [][]string // per call
	got     [][]byte   // the bytes fetched
	headers []http.Header
}

func (b *formBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	urls := skills.FileURLs(r)
	b.mu.Lock()
	b.urls = append(b.urls, urls)
	b.mu.Unlock()
	for _, u := range urls {
		resp, err := http.Get(u)
		if err != nil || resp.StatusCode != http.StatusOK {
			http.Error(w, fmt.Sprintf("fetch %v %v", err, resp), http.StatusBadGateway)
			return
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		b.mu.Lock()
		b.got, b.headers = append(b.got, data), append(b.headers, resp.Header)
		b.mu.Unlock()
	}
	fmt.Fprintf(w, `{"summary":"已收到 %d 个附件"}`, len(urls))
}

// TestSkillThatTakesFilesGetsTheSendersAttachment: a photo of a form sent
// to a self-built app reaches an HR skill with files: true as one URL
// under server.public_url (never WeCom's media/get or token); GET answers
// the bytes with their sniffed type, its name and no caching. The URL
// stops working after media.file_url_ttl (410), a forged or altered token
// gets 404, and a skill without files: true gets no header.
func TestSkillThatTakesFilesGetsTheSendersAttachment(t *testing.T) {
	t.Parallel()
	backend := &formBackend{}
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	for name, def := range map[string]string{
		"form":  "name: hr_form_submit\ndescription: 提交表单照片\nendpoint: " + srv.URL + "/forms\nfiles: true\nidentity: none\n",
		"plain": "name: hr_note\ndescription: 记一笔\nendpoint: " + srv.URL + "/notes\nidentity: none\n",
	} {
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte("---\n"+def+"---\n"), 0o644)
	}
	h := gatewaytest.New(t)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == openai.ChatMessageRoleTool:
			return openaitest.Reply{Content: "已提交。"}
		case len(last.MultiContent) > 0: // the photo
			return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_form_submit", `{}`)}}
		}
		return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_note", `{}`)}}
	})
	clock := &gatewaytest.JumpClock{}
	h.ModelYAML = "  vision: true"
	h.Start(gateway.Deps{SkillsFS: os.DirFS(dir), Now: clock.Now})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	photo := chantest.PNG(t, 20, 30)
	id := h.WeComAPI.AddMedia(photo, "请假单.png")
	for i, xml := range []string{
		wecomtest.ImageMessageXML(gatewaytest.CorpID, "zhangsan", h.WeComAPI.URL()+"/pic.png", id, "7300", gatewaytest.AgentID, time.Now().Unix()),
		gatewaytest.TextXML("zhangsan", "记一下", "7301"),
	} {
		u, body := h.CallbackRequest(xml, time.Now())
		if status, _ := gatewaytest.Post(t, u, body); status != 200 {
			t.Fatalf("callback answered %d", status)
		}
		if _, err := h.WeComAPI.WaitMessages(ctx, i+1); err != nil {
			t.Fatal(err)
		}
	}
	backend.mu.Lock()
	urls, got, headers := backend.urls, backend.got, backend.headers
	backend.mu.Unlock()
	if len(urls) != 2 || len(urls[0]) != 1 || len(urls[1]) != 0 {
		t.Fatalf("backend got URLs %q, want one for the form skill, none for the other", urls)
	}
	u := urls[0][0]
	if !strings.HasPrefix(u, h.Srv.URL+"/v1/files/") || strings.Contains(u, id) || strings.Contains(u, h.WeComAPI.URL()) {
		t.Fatalf("file URL %q, want one of Hermes's own, naming nothing of WeCom's", u)
	}
	if len(got) != 1 || string(got[0]) != string(photo) {
		t.Fatalf("backend fetched %d files, want the photo", len(got))
	}
	if ct, cd, cc := headers[0].Get("Content-Type"), headers[0].Get("Content-Disposition"), headers[0].Get("Cache-Control"); ct != "image/png" ||
		cd != `attachment; filename*=utf-8''%E8%AF%B7%E5%81%87%E5%8D%95.png` || cc != "no-store" {
		t.Errorf("file served with Content-Type %q, Content-Disposition %q, Cache-Control %q", ct, cd, cc)
	}
	if m := h.WeComAPI.Messages(); m[0].Content != "已提交。" {
		t.Errorf("reply %q", m[0].Content)
	}
	status := func(u string) int {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	forged := u[:len(u)-2] + "xx"
	if s := status(forged); s != http.StatusNotFound {
		t.Errorf("altered token answered %d, want 404", s)
	}
	if s := status(h.Srv.URL + "/v1/files/nothing"); s != http.StatusNotFound {
		t.Errorf("made-up token answered %d, want 404", s)
	}
	if s := status(u); s != http.StatusOK {
		t.Errorf("the URL within its time answered %d, want 200", s)
	}
	clock.Jump(10*time.Minute + time.Second) // media.file_url_ttl
	if s := status(u); s != http.StatusGone {
		t.Errorf("the URL after media.file_url_ttl answered %d, want 410", s)
	}
	if n := h.Count(`SELECT count(*) FROM skill_files WHERE skill = 'hr_form_submit' AND user_id = 'zhangsan' AND fetches = 3`); n != 1 {
		t.Errorf("the URL's fetches are not recorded")
	}
}

// TestFilesAreOnlyTheCallersOwn: the issuer refuses a call whose message
// is another employee's, and gives a message without attachments none.
func TestFilesAreOnlyTheCallersOwn(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	features := gatewaytest.NewFeatures()
	h.Start(gateway.Deps{Features: features})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	id := h.WeComAPI.AddMedia(chantest.PNG(t, 4, 4), "")
	u, body := h.CallbackRequest(wecomtest.ImageMessageXML(gatewaytest.CorpID, "zhangsan", "", id, "7310", gatewaytest.AgentID, time.Now().Unix()), time.Now())
	if status, _ := gatewaytest.Post(t, u, body); status != 200 {
		t.Fatalf("callback answered %d", status)
	}
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var inbound int64
	if err := h.Pool.QueryRow(ctx, `SELECT id FROM inbound_messages WHERE platform_msg_id = '7310'`).Scan(&inbound); err != nil {
		t.Fatal(err)
	}
	files := gatewaytest.FeatureOf[*skillfiles.Service](t, features)
	owner := skills.Caller{UserID: "zhangsan", Channel: "wecom", Account: gatewaytest.App, ChatID: "zhangsan", Origin: skills.InboundID(inbound)}
	if urls, err := files.Files(ctx, owner, "hr_form_submit"); err != nil || len(urls) != 1 {
		t.Fatalf("the sender's own call got %q, %v; want one URL", urls, err)
	}
	other := owner
	other.UserID, other.ChatID = "lisi", "lisi"
	if urls, err := files.Files(ctx, other, "hr_form_submit"); err == nil || len(urls) != 0 {
		t.Fatalf("another employee's call got %q, %v; want a refusal", urls, err)
	}
	if urls, err := files.Files(ctx, skills.Caller{UserID: "zhangsan"}, "hr_form_submit"); err != nil || urls != nil {
		t.Fatalf("a call without a message got %q, %v; want none", urls, err)
	}
	if h.Count(`SELECT count(*) FROM skill_files`) != 1 {
		t.Errorf("refused calls stored URLs")
	}
}

// TestConfirmedCallGetsTheFilesOfTheMessageThatAsked: a skill with files
// and confirm asks first; the call 「确认」 releases carries the photo of
// the message that asked, not the (empty) 「确认」 message's.
func TestConfirmedCallGetsTheFilesOfTheMessageThatAsked(t *testing.T) {
	t.Parallel()
	backend := &formBackend{}
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "form"), 0o755)
	os.WriteFile(filepath.Join(dir, "form", "SKILL.md"), []byte("---\nname: hr_form_submit\ndescription: 提交表单照片\nendpoint: "+
		srv.URL+"/forms\nfiles: true\nconfirm: {prompt: \"提交这张表单\"}\nidentity: none\n---\n"), 0o644)
	h := gatewaytest.New(t)
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		if last := req.Messages[len(req.Messages)-1]; len(last.MultiContent) > 0 {
			return openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_form_submit", `{}`)}}
		}
		return openaitest.Reply{Content: "好的。"}
	})
	h.ModelYAML = "  vision: true"
	h.Start(gateway.Deps{SkillsFS: os.DirFS(dir)})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	photo := chantest.PNG(t, 12, 12)
	id := h.WeComAPI.AddMedia(photo, "")
	for i, xml := range []string{
		wecomtest.ImageMessageXML(gatewaytest.CorpID, "zhangsan", "", id, "7320", gatewaytest.AgentID, time.Now().Unix()),
		gatewaytest.TextXML("zhangsan", "确认", "7321"),
	} {
		u, body := h.CallbackRequest(xml, time.Now())
		if status, _ := gatewaytest.Post(t, u, body); status != 200 {
			t.Fatalf("callback answered %d", status)
		}
		if _, err := h.WeComAPI.WaitMessages(ctx, i+1); err != nil {
			t.Fatal(err)
		}
	}
	backend.mu.Lock()
	defer backend.mu.Unlock()
	if len(backend.urls) != 1 || len(backend.got) != 1 || string(backend.got[0]) != string(photo) {
		t.Fatalf("backend got URLs %q and %d files; want the photo once, after 「确认」", backend.urls, len(backend.got))
	}
}
