package gateway_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

func TestCallbackEndsAsOneReplyToTheSender(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", `{}`)}},
		openaitest.Reply{Content: "你还有 7.5 天年假。"},
	)
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "我还有几天年假？", "1001"), time.Now())
	status, respBody := gatewaytest.Post(t, u, body)
	if status != 200 || respBody != "" {
		t.Fatalf("ack = %d %q, want 200 with an empty body", status, respBody)
	}
	msgs, err := h.WeComAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	msgs = h.WeComAPI.Messages()
	if len(msgs) != 1 {
		t.Fatalf("delivered %d messages, want 1: %+v", len(msgs), msgs)
	}
	if m := msgs[0]; m.ToUser != "zhangsan" || m.Content != "你还有 7.5 天年假。" || m.AgentID != gatewaytest.AgentID {
		t.Fatalf("delivered %+v, want the answer to zhangsan via agent %s", m, gatewaytest.AgentID)
	}
	// The skill ran for the verified sender.
	calls := h.Backend.Calls()
	if len(calls) != 1 || calls[0].Identity.UserID != "zhangsan" || calls[0].Identity.Channel != "wecom" {
		t.Fatalf("backend calls %+v, want one for zhangsan over wecom", calls)
	}
	// Everything is on record: inbound, run with steps, history, outbox.
	if n := h.Count(`SELECT count(*) FROM inbound_messages WHERE status = 'done'`); n != 1 {
		t.Errorf("done inbound rows = %d, want 1", n)
	}
	if n := h.Count(`SELECT count(*) FROM run_trace`); n < 3 {
		t.Errorf("run steps = %d, want model, tool, model", n)
	}
	if n := h.Count(`SELECT count(*) FROM messages`); n != 2 {
		t.Errorf("history rows = %d, want user + assistant", n)
	}
	if n := h.Count(`SELECT count(*) FROM outbox WHERE delivered_at IS NOT NULL`); n != 1 {
		t.Errorf("delivered outbox rows = %d, want 1", n)
	}
	if calls[0].RequestID == "" || h.Count(`SELECT count(*) FROM runs WHERE id = $1`, calls[0].RequestID) != 1 {
		t.Errorf("skill request id %q is not the run's id", calls[0].RequestID)
	}
}

func TestSameCallbackFourTimesConcurrentlyGivesOneReply(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.Script(openaitest.Reply{Content: "收到"})
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	u, body := h.CallbackRequest(gatewaytest.TextXML("lisi", "你好", "2002"), time.Now())
	var wg sync.WaitGroup
	statuses := make([]int, 4)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = gatewaytest.Post(t, u, body)
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Fatalf("callback %d answered %d, want 200", i, s)
		}
	}
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if got := len(h.WeComAPI.Messages()); got != 1 {
		t.Fatalf("replies = %d, want 1", got)
	}
	if got := len(h.Model.Requests()); got != 1 {
		t.Fatalf("model calls = %d, want 1", got)
	}
	// One run, started by the replica itself or by a job (when its
	// workers were busy), never both.
	if n := h.Count(`SELECT count(*) FROM runs`); n != 1 {
		t.Fatalf("runs = %d, want 1", n)
	}
	if n := h.Count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.process_inbound'`); n > 1 {
		t.Fatalf("agent jobs = %d, want at most 1", n)
	}
}

func TestForgedSignatureIsRefusedAndStoresNothing(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{})
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "hi", "3003"), time.Now())
	forged := strings.Replace(u, "msg_signature=", "msg_signature=0", 1)
	if status, _ := gatewaytest.Post(t, forged, body); status != 401 {
		t.Fatalf("forged signature answered %d, want 401", status)
	}
	// A valid signature over another body is forged too.
	_, other := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "hi", "3004"), time.Now())
	if status, _ := gatewaytest.Post(t, u, other); status != 401 {
		t.Fatalf("signature over another body answered %d, want 401", status)
	}
	assertNothingStored(t, h)
}

func TestStaleTimestampIsRefused(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{})
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "hi", "4004"), time.Now().Add(-time.Hour))
	if status, _ := gatewaytest.Post(t, u, body); status != 401 {
		t.Fatalf("stale callback answered %d, want 401", status)
	}
	assertNothingStored(t, h)
}

func assertNothingStored(t *testing.T, h *gatewaytest.Harness) {
	t.Helper()
	if n := h.Count(`SELECT count(*) FROM inbound_messages`); n != 0 {
		t.Errorf("inbound rows = %d, want 0", n)
	}
	if n := h.MessageJobs(); n != 0 {
		t.Errorf("jobs = %d, want 0", n)
	}
}

func TestURLVerificationAnswersBarePlaintext(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	// The official vector is from 2014: run the gateway at that time.
	h.Start(gateway.Deps{Now: func() time.Time { return time.Unix(1409659589, 0) }})
	q := wecomtest.VerifyURLQuery(h.Crypto, "1616140317555161061", "1409659589", "263014780")
	resp, err := http.Get(h.Srv.URL + "/wecom/" + gatewaytest.App + "/callback?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(got) != "1616140317555161061" {
		t.Fatalf("verification answered %d %q, want 200 and the bare echostr plaintext", resp.StatusCode, got)
	}
	resp2, err := http.Get(h.Srv.URL + "/wecom/no-such-app/callback?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 404 {
		t.Fatalf("unknown app answered %d, want 404", resp2.StatusCode)
	}
}

func TestDatabaseDownAnswers503(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{})
	if resp, err := http.Get(h.Srv.URL + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz with the database up: %v %v", resp, err)
	}
	h.Pool.Close() // Postgres unreachable for the gateway from here on
	if resp, err := http.Get(h.Srv.URL + "/readyz"); err != nil || resp.StatusCode != 503 {
		t.Fatalf("readyz with the database down: %v %v, want 503", resp, err)
	}
	// The process still serves: liveness is not readiness.
	if resp, err := http.Get(h.Srv.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz with the database down: %v %v, want 200", resp, err)
	}
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "hi", "5005"), time.Now())
	if status, _ := gatewaytest.Post(t, u, body); status < 500 {
		t.Fatalf("callback with the database down answered %d, want 5xx so WeCom retries", status)
	}
}

func TestNonTextMessageGetsPoliteReply(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	xml := wecomtest.LocationMessageXML(gatewaytest.CorpID, "wangwu", "6006", gatewaytest.AgentID, time.Now().Unix())
	u, body := h.CallbackRequest(xml, time.Now())
	if status, _ := gatewaytest.Post(t, u, body); status != 200 {
		t.Fatalf("location callback answered %d", status)
	}
	msgs, err := h.WeComAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].ToUser != "wangwu" || msgs[0].Content != config.DefaultMessages.Unsupported {
		t.Fatalf("reply %+v, want the unsupported-type message to wangwu", msgs[0])
	}
	if n := len(h.Model.Requests()); n != 0 {
		t.Fatalf("model called %d times for a location", n)
	}
	if n := h.Count(`SELECT count(*) FROM inbound_messages WHERE msg_type = 'location'`); n != 1 {
		t.Fatalf("location not recorded")
	}
}

// TestAppImageIsFetchedByMediaGet: a self-built app's image message is
// fetched by media/get with the app's token and reaches a vision model; an
// unknown media id (WeCom's 40007) is answered as expired.
func TestAppImageIsFetchedByMediaGet(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.ModelYAML = "  vision: true"
	var seen []openai.ChatCompletionMessage
	var mu sync.Mutex
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		mu.Lock()
		seen = append(seen, req.Messages[len(req.Messages)-1])
		mu.Unlock()
		return openaitest.Reply{Content: "看到了"}
	})
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	shot := chantest.PNG(t, 32, 16)
	id := h.WeComAPI.AddMedia(shot, "截图.png")
	for i, mediaID := range []string{id, "MEDIA_unknown"} {
		xml := wecomtest.ImageMessageXML(gatewaytest.CorpID, "wangwu", "https://example.invalid/p.png", mediaID, fmt.Sprint(7000+i), gatewaytest.AgentID, time.Now().Unix())
		u, body := h.CallbackRequest(xml, time.Now())
		if status, _ := gatewaytest.Post(t, u, body); status != 200 {
			t.Fatalf("image callback answered %d", status)
		}
		if _, err := h.WeComAPI.WaitMessages(ctx, i+1); err != nil {
			t.Fatal(err)
		}
	}
	msgs, _ := h.WeComAPI.WaitMessages(ctx, 2)
	if msgs[0].Content != "看到了" || msgs[1].Content != config.DefaultMediaMessages.FetchFailed {
		t.Fatalf("replies %q, %q; want the model's, then fetch_failed", msgs[0].Content, msgs[1].Content)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || len(seen[0].MultiContent) != 2 || seen[0].MultiContent[1].ImageURL.URL != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(shot) {
		t.Fatalf("model got %+v, want the image by media/get", seen)
	}
	if n := h.Count(`SELECT count(*) FROM inbound_media WHERE name = '截图.png' AND size = $1`, len(shot)); n != 1 {
		t.Errorf("the image is not kept with its name and size")
	}
}

func TestLongReplyIsSplitWithinWeComLimit(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	para := strings.Repeat("这是一段很长的回答，用来测试按句子切分。", 20) // 20 sentences, 1200 bytes
	answer := strings.Join([]string{para, para, para, para}, "\n\n")
	h.Model.Script(openaitest.Reply{Content: answer})
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "写长一点", "7007"), time.Now())
	if status, _ := gatewaytest.Post(t, u, body); status != 200 {
		t.Fatalf("callback answered %d", status)
	}
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	msgs := h.WeComAPI.Messages()
	if len(msgs) < 3 {
		t.Fatalf("parts = %d, want the %d-byte answer split", len(msgs), len(answer))
	}
	var joined strings.Builder
	for _, m := range msgs {
		if len(m.Content) > 2048 || m.Truncated || !utf8.ValidString(m.Content) {
			t.Fatalf("part of %d bytes (truncated=%v, valid utf8=%v)", len(m.Content), m.Truncated, utf8.ValidString(m.Content))
		}
		if !strings.HasSuffix(m.Content, "。") {
			t.Fatalf("part does not end on a sentence: %q", m.Content[len(m.Content)-12:])
		}
		joined.WriteString(m.Content)
	}
	if strip(joined.String()) != strip(answer) {
		t.Fatal("parts do not add up to the answer")
	}
}

func strip(s string) string { return strings.Join(strings.Fields(s), "") }

func TestTokenInvalidatedMidSendIsRefreshedAndSentOnce(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Model.Script(openaitest.Reply{Content: "好的"})
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)

	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "第一条", "8001"), time.Now())
	gatewaytest.Post(t, u, body)
	if _, err := h.WeComAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.WeComAPI.InvalidateTokens() // WeCom invalidates the cached token early
	u, body = h.CallbackRequest(gatewaytest.TextXML("zhangsan", "第二条", "8002"), time.Now())
	gatewaytest.Post(t, u, body)
	if _, err := h.WeComAPI.WaitMessages(ctx, 2); err != nil {
		t.Fatal(err)
	}
	h.WaitIdle(ctx)
	if got := len(h.WeComAPI.Messages()); got != 2 {
		t.Fatalf("delivered %d, want 2 (one per message)", got)
	}
	if got := h.WeComAPI.TokenRequests(); got != 2 {
		t.Fatalf("token requests = %d, want 2 (initial + one refresh)", got)
	}
	if n := h.Count(`SELECT count(*) FROM token_cache`); n != 1 {
		t.Fatalf("token cache rows = %d, want 1 shared token", n)
	}
}

func TestStatusPageShowsNamesNotSecrets(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{})
	resp, err := http.Get(h.Srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"/wecom/app-hr/callback", "hr_leave_balance"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	for _, secret := range []string{h.Secret, gatewaytest.Token, gatewaytest.AESKey} {
		if strings.Contains(string(page), secret) {
			t.Fatalf("status page shows a secret")
		}
	}
}

func TestEventIsRecordedNotAnswered(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	created := time.Now().Unix()
	xml := wecomtest.EventXML(gatewaytest.CorpID, "zhangsan", "enter_agent", "", gatewaytest.AgentID, created)
	for range 2 { // WeCom retries: the same event twice is one row
		u, body := h.CallbackRequest(xml, time.Now())
		if status, _ := gatewaytest.Post(t, u, body); status != 200 {
			t.Fatalf("event callback answered %d", status)
		}
	}
	h.WaitIdle(ctx)
	if n := h.Count(`SELECT count(*) FROM inbound_messages WHERE msg_type = 'event' AND status = 'ignored'`); n != 1 {
		t.Fatalf("event rows = %d, want 1 recorded as ignored", n)
	}
	if n := h.MessageJobs(); n != 0 {
		t.Fatalf("jobs = %d, want none for an event", n)
	}
}
