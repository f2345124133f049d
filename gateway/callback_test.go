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
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
)

func TestCallbackEndsAsOneReplyToTheSender(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.model.Script(
		openaitest.Reply{ToolCalls: []openai.ToolCall{openaitest.ToolCall("hr_leave_balance", `{}`)}},
		openaitest.Reply{Content: "你还有 7.5 天年假。"},
	)
	h.start(gateway.Deps{})
	ctx := withTimeout(t, 30*time.Second)

	u, body := h.callbackRequest(textXML("zhangsan", "我还有几天年假？", "1001"), time.Now())
	status, respBody := post(t, u, body)
	if status != 200 || respBody != "" {
		t.Fatalf("ack = %d %q, want 200 with an empty body", status, respBody)
	}
	msgs, err := h.wecomAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	h.waitIdle(ctx)
	msgs = h.wecomAPI.Messages()
	if len(msgs) != 1 {
		t.Fatalf("delivered %d messages, want 1: %+v", len(msgs), msgs)
	}
	if m := msgs[0]; m.ToUser != "zhangsan" || m.Content != "你还有 7.5 天年假。" || m.AgentID != testAgentID {
		t.Fatalf("delivered %+v, want the answer to zhangsan via agent %s", m, testAgentID)
	}
	// The skill ran for the verified sender.
	calls := h.backend.Calls()
	if len(calls) != 1 || calls[0].Identity.UserID != "zhangsan" || calls[0].Identity.Channel != "wecom" {
		t.Fatalf("backend calls %+v, want one for zhangsan over wecom", calls)
	}
	// Everything is on record: inbound, run with steps, history, outbox.
	if n := h.count(`SELECT count(*) FROM inbound_messages WHERE status = 'done'`); n != 1 {
		t.Errorf("done inbound rows = %d, want 1", n)
	}
	if n := h.count(`SELECT count(*) FROM run_steps`); n < 3 {
		t.Errorf("run steps = %d, want model, tool, model", n)
	}
	if n := h.count(`SELECT count(*) FROM messages`); n != 2 {
		t.Errorf("history rows = %d, want user + assistant", n)
	}
	if n := h.count(`SELECT count(*) FROM outbox WHERE delivered_at IS NOT NULL`); n != 1 {
		t.Errorf("delivered outbox rows = %d, want 1", n)
	}
	if calls[0].RequestID == "" || h.count(`SELECT count(*) FROM runs WHERE id = $1`, calls[0].RequestID) != 1 {
		t.Errorf("skill request id %q is not the run's id", calls[0].RequestID)
	}
}

func TestSameCallbackFourTimesConcurrentlyGivesOneReply(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.model.Script(openaitest.Reply{Content: "收到"})
	h.start(gateway.Deps{})
	ctx := withTimeout(t, 30*time.Second)

	u, body := h.callbackRequest(textXML("lisi", "你好", "2002"), time.Now())
	var wg sync.WaitGroup
	statuses := make([]int, 4)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = post(t, u, body)
		}()
	}
	wg.Wait()
	for i, s := range statuses {
		if s != 200 {
			t.Fatalf("callback %d answered %d, want 200", i, s)
		}
	}
	if _, err := h.wecomAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(ctx)
	if got := len(h.wecomAPI.Messages()); got != 1 {
		t.Fatalf("replies = %d, want 1", got)
	}
	if got := len(h.model.Requests()); got != 1 {
		t.Fatalf("model calls = %d, want 1", got)
	}
	if n := h.count(`SELECT count(*) FROM river_job WHERE kind = 'hermes.process_inbound'`); n != 1 {
		t.Fatalf("agent jobs = %d, want 1", n)
	}
}

func TestForgedSignatureIsRefusedAndStoresNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(gateway.Deps{})
	u, body := h.callbackRequest(textXML("zhangsan", "hi", "3003"), time.Now())
	forged := strings.Replace(u, "msg_signature=", "msg_signature=0", 1)
	if status, _ := post(t, forged, body); status != 401 {
		t.Fatalf("forged signature answered %d, want 401", status)
	}
	// A valid signature over another body is forged too.
	_, other := h.callbackRequest(textXML("zhangsan", "hi", "3004"), time.Now())
	if status, _ := post(t, u, other); status != 401 {
		t.Fatalf("signature over another body answered %d, want 401", status)
	}
	assertNothingStored(t, h)
}

func TestStaleTimestampIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(gateway.Deps{})
	u, body := h.callbackRequest(textXML("zhangsan", "hi", "4004"), time.Now().Add(-time.Hour))
	if status, _ := post(t, u, body); status != 401 {
		t.Fatalf("stale callback answered %d, want 401", status)
	}
	assertNothingStored(t, h)
}

func assertNothingStored(t *testing.T, h *harness) {
	t.Helper()
	if n := h.count(`SELECT count(*) FROM inbound_messages`); n != 0 {
		t.Errorf("inbound rows = %d, want 0", n)
	}
	if n := h.messageJobs(); n != 0 {
		t.Errorf("jobs = %d, want 0", n)
	}
}

func TestURLVerificationAnswersBarePlaintext(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// The official vector is from 2014: run the gateway at that time.
	h.start(gateway.Deps{Now: func() time.Time { return time.Unix(1409659589, 0) }})
	q := wecomtest.VerifyURLQuery(h.crypto, "1616140317555161061", "1409659589", "263014780")
	resp, err := http.Get(h.srv.URL + "/wecom/" + testApp + "/callback?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(got) != "1616140317555161061" {
		t.Fatalf("verification answered %d %q, want 200 and the bare echostr plaintext", resp.StatusCode, got)
	}
	resp2, err := http.Get(h.srv.URL + "/wecom/no-such-app/callback?" + q.Encode())
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
	h := newHarness(t)
	h.start(gateway.Deps{})
	if resp, err := http.Get(h.srv.URL + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("readyz with the database up: %v %v", resp, err)
	}
	h.pool.Close() // Postgres unreachable for the gateway from here on
	if resp, err := http.Get(h.srv.URL + "/readyz"); err != nil || resp.StatusCode != 503 {
		t.Fatalf("readyz with the database down: %v %v, want 503", resp, err)
	}
	// The process still serves: liveness is not readiness.
	if resp, err := http.Get(h.srv.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz with the database down: %v %v, want 200", resp, err)
	}
	u, body := h.callbackRequest(textXML("zhangsan", "hi", "5005"), time.Now())
	if status, _ := post(t, u, body); status < 500 {
		t.Fatalf("callback with the database down answered %d, want 5xx so WeCom retries", status)
	}
}

func TestNonTextMessageGetsPoliteReply(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(gateway.Deps{})
	ctx := withTimeout(t, 30*time.Second)
	xml := wecomtest.LocationMessageXML(testCorpID, "wangwu", "6006", testAgentID, time.Now().Unix())
	u, body := h.callbackRequest(xml, time.Now())
	if status, _ := post(t, u, body); status != 200 {
		t.Fatalf("location callback answered %d", status)
	}
	msgs, err := h.wecomAPI.WaitMessages(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].ToUser != "wangwu" || msgs[0].Content != config.DefaultMessages.Unsupported {
		t.Fatalf("reply %+v, want the unsupported-type message to wangwu", msgs[0])
	}
	if n := len(h.model.Requests()); n != 0 {
		t.Fatalf("model called %d times for a location", n)
	}
	if n := h.count(`SELECT count(*) FROM inbound_messages WHERE msg_type = 'location'`); n != 1 {
		t.Fatalf("location not recorded")
	}
}

// TestAppImageIsFetchedByMediaGet: a self-built app's image message is
// fetched by media/get with the app's token and reaches a vision model; an
// unknown media id (WeCom's 40007) is answered as expired.
func TestAppImageIsFetchedByMediaGet(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.modelYAML = "  vision: true"
	var seen []openai.ChatCompletionMessage
	var mu sync.Mutex
	h.model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		mu.Lock()
		seen = append(seen, req.Messages[len(req.Messages)-1])
		mu.Unlock()
		return openaitest.Reply{Content: "看到了"}
	})
	h.start(gateway.Deps{})
	ctx := withTimeout(t, 30*time.Second)
	shot := pngOf(t, 32, 16)
	id := h.wecomAPI.AddMedia(shot, "截图.png")
	for i, mediaID := range []string{id, "MEDIA_unknown"} {
		xml := wecomtest.ImageMessageXML(testCorpID, "wangwu", "https://example.invalid/p.png", mediaID, fmt.Sprint(7000+i), testAgentID, time.Now().Unix())
		u, body := h.callbackRequest(xml, time.Now())
		if status, _ := post(t, u, body); status != 200 {
			t.Fatalf("image callback answered %d", status)
		}
		if _, err := h.wecomAPI.WaitMessages(ctx, i+1); err != nil {
			t.Fatal(err)
		}
	}
	msgs, _ := h.wecomAPI.WaitMessages(ctx, 2)
	if msgs[0].Content != "看到了" || msgs[1].Content != config.DefaultMediaMessages.FetchFailed {
		t.Fatalf("replies %q, %q; want the model's, then fetch_failed", msgs[0].Content, msgs[1].Content)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || len(seen[0].MultiContent) != 2 || seen[0].MultiContent[1].ImageURL.URL != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(shot) {
		t.Fatalf("model got %+v, want the image by media/get", seen)
	}
	if n := h.count(`SELECT count(*) FROM inbound_media WHERE name = '截图.png' AND size = $1`, len(shot)); n != 1 {
		t.Errorf("the image is not kept with its name and size")
	}
}

func TestLongReplyIsSplitWithinWeComLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	para := strings.Repeat("这是一段很长的回答，用来测试按句子切分。", 20) // 20 sentences, 1200 bytes
	answer := strings.Join([]string{para, para, para, para}, "\n\n")
	h.model.Script(openaitest.Reply{Content: answer})
	h.start(gateway.Deps{})
	ctx := withTimeout(t, 30*time.Second)
	u, body := h.callbackRequest(textXML("zhangsan", "写长一点", "7007"), time.Now())
	if status, _ := post(t, u, body); status != 200 {
		t.Fatalf("callback answered %d", status)
	}
	if _, err := h.wecomAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(ctx)
	msgs := h.wecomAPI.Messages()
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
	h := newHarness(t)
	h.model.Script(openaitest.Reply{Content: "好的"})
	h.start(gateway.Deps{})
	ctx := withTimeout(t, 30*time.Second)

	u, body := h.callbackRequest(textXML("zhangsan", "第一条", "8001"), time.Now())
	post(t, u, body)
	if _, err := h.wecomAPI.WaitMessages(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h.wecomAPI.InvalidateTokens() // WeCom invalidates the cached token early
	u, body = h.callbackRequest(textXML("zhangsan", "第二条", "8002"), time.Now())
	post(t, u, body)
	if _, err := h.wecomAPI.WaitMessages(ctx, 2); err != nil {
		t.Fatal(err)
	}
	h.waitIdle(ctx)
	if got := len(h.wecomAPI.Messages()); got != 2 {
		t.Fatalf("delivered %d, want 2 (one per message)", got)
	}
	if got := h.wecomAPI.TokenRequests(); got != 2 {
		t.Fatalf("token requests = %d, want 2 (initial + one refresh)", got)
	}
	if n := h.count(`SELECT count(*) FROM token_cache`); n != 1 {
		t.Fatalf("token cache rows = %d, want 1 shared token", n)
	}
}

func TestStatusPageShowsNamesNotSecrets(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(gateway.Deps{})
	resp, err := http.Get(h.srv.URL + "/")
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
	for _, secret := range []string{h.secret, testToken, testAESKey} {
		if strings.Contains(string(page), secret) {
			t.Fatalf("status page shows a secret")
		}
	}
}

func TestEventIsRecordedNotAnswered(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.start(gateway.Deps{})
	ctx := withTimeout(t, 30*time.Second)
	created := time.Now().Unix()
	xml := wecomtest.EventXML(testCorpID, "zhangsan", "enter_agent", "", testAgentID, created)
	for range 2 { // WeCom retries: the same event twice is one row
		u, body := h.callbackRequest(xml, time.Now())
		if status, _ := post(t, u, body); status != 200 {
			t.Fatalf("event callback answered %d", status)
		}
	}
	h.waitIdle(ctx)
	if n := h.count(`SELECT count(*) FROM inbound_messages WHERE msg_type = 'event' AND status = 'ignored'`); n != 1 {
		t.Fatalf("event rows = %d, want 1 recorded as ignored", n)
	}
	if n := h.messageJobs(); n != 0 {
		t.Fatalf("jobs = %d, want none for an event", n)
	}
}
