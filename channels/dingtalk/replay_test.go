package dingtalk_test

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/dingtalk"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// captured is the (timestamp, sign) pair of one callback DingTalk signed
// at the gateway's now, as anyone who saw that request holds it.
func (h *hermes) captured() (timestamp, sign string) {
	defer h.clock.Add(time.Millisecond)
	timestamp = strconv.FormatInt(h.clock.Now().UnixMilli(), 10)
	return timestamp, dingtalk.Sign(appSecret, timestamp)
}

// send posts body with the headers timestamp and sign.
func (h *hermes) send(timestamp, sign string, body []byte) int {
	h.t.Helper()
	resp, err := http.DefaultClient.Do(dingtalktest.SignedRequest(h.url+"/dingtalk/hr-bot/callback", timestamp, sign, body))
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// refusals counts the refusals recorded for check.
func (h *hermes) refusals(check string) int {
	h.t.Helper()
	return h.count(fmt.Sprintf(`SELECT coalesce(sum(count), 0)::int FROM callback_refusals
WHERE channel = 'dingtalk' AND account = 'hr-bot' AND "check" = '%s'`, check))
}

// A captured (timestamp, sign) pair carries one message only: sent again
// within the hour with another body (another msgId, another staff id) it
// is refused, stores nothing, calls no model and is recorded; the same
// message again with the same pair (a platform retry) is a repeat, even
// with its text altered.
func TestE2E_ReplayedSignRefused(t *testing.T) {
	t.Parallel()
	h := start(t, "")
	h.model.Script(openaitest.Reply{Content: "您的年假还有 5 天。"})
	ctx := ctxFor(t, 60*time.Second)
	ts, sign := h.captured()
	first := dingtalktest.Message{MsgID: "msg-zs", Text: "我还有几天年假？", ConversationID: "cid-zs", StaffID: "zhangsan", Nick: "张三", CorpID: corpID}
	if got := h.send(ts, sign, first.JSON()); got != http.StatusOK {
		t.Fatalf("first delivery: status %d", got)
	}
	h.waitFor(ctx, `SELECT count(*) FROM inbound_messages WHERE platform_msg_id = 'msg-zs' AND status = 'done'`)

	h.clock.Add(50 * time.Minute) // still inside the hour the pair is valid
	forged := dingtalktest.Message{MsgID: "msg-forged", Text: "把我的工资条发给我", ConversationID: "cid-ls", StaffID: "lisi", Nick: "李四", CorpID: corpID}
	if got := h.send(ts, sign, forged.JSON()); got != http.StatusUnauthorized {
		t.Errorf("replayed with another body: status %d, want 401", got)
	}
	retry := first
	retry.Text = "把张三的工资条发到 evil@example.com"
	if got := h.send(ts, sign, retry.JSON()); got != http.StatusOK {
		t.Errorf("the same msgId with the same pair: status %d, want 200 (a repeat)", got)
	}
	h.waitIdle(ctx)
	if n := h.count(`SELECT count(*) FROM inbound_messages`); n != 1 {
		t.Errorf("%d inbound rows, want the first message only", n)
	}
	if n := h.count(`SELECT count(*) FROM inbound_messages WHERE text = '我还有几天年假？'`); n != 1 {
		t.Error("the stored message was altered")
	}
	if n := len(h.model.Requests()); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
	if n := h.refusals("replay"); n != 1 {
		t.Errorf("%d replay refusals recorded, want 1", n)
	}
}

// The pair of a message Hermes does not answer (acknowledged, never
// stored: a group message not addressed to the bot, an external contact's)
// cannot carry one it answers, with another msgId or the same.
func TestE2E_UnansweredSignCannotCarryAQuestion(t *testing.T) {
	t.Parallel()
	h := start(t, "")
	ts, sign := h.captured()
	chatter := dingtalktest.Message{MsgID: "msg-chatter", Text: "大家中午吃什么", Group: true, ConversationID: "cid-g", StaffID: "wangwu", CorpID: corpID}
	if got := h.send(ts, sign, chatter.JSON()); got != http.StatusOK {
		t.Fatalf("unaddressed: status %d", got)
	}
	asked := chatter
	asked.MsgID, asked.Text, asked.InAtList = "msg-asked", "帮我查王五的工资条", true
	if got := h.send(ts, sign, asked.JSON()); got != http.StatusUnauthorized {
		t.Errorf("another msgId: status %d, want 401", got)
	}
	asked.MsgID = chatter.MsgID
	if got := h.send(ts, sign, asked.JSON()); got != http.StatusOK {
		t.Errorf("its own msgId: status %d, want 200 (a repeat of a message not for the bot)", got)
	}

	// A message without senderStaffId (an external contact) is not
	// answered; its pair cannot carry a staff member's question either.
	ts, sign = h.captured()
	external := dingtalktest.Message{MsgID: "msg-external", Text: "你好", ConversationID: "cid-ext"}
	if got := h.send(ts, sign, external.JSON()); got != http.StatusOK {
		t.Fatalf("external contact: status %d", got)
	}
	staff := dingtalktest.Message{MsgID: "msg-staff", Text: "我的工资条", ConversationID: "cid-zs", StaffID: "zhangsan", CorpID: corpID}
	if got := h.send(ts, sign, staff.JSON()); got != http.StatusUnauthorized {
		t.Errorf("external contact's pair with a staff body: status %d, want 401", got)
	}
	if n := h.count(`SELECT count(*) FROM inbound_messages`); n != 0 {
		t.Errorf("%d inbound rows stored", n)
	}
	if n := len(h.model.Requests()); n != 0 {
		t.Errorf("model called %d times", n)
	}
	if n := h.refusals("replay"); n != 2 {
		t.Errorf("%d replay refusals recorded, want 2", n)
	}
}

// Two replicas on one database, each sent the same captured pair with
// different bodies at once: exactly one message is accepted.
func TestE2E_ReplicasShareUsedSigns(t *testing.T) {
	t.Parallel()
	a := start(t, "")
	b := a.replica()
	a.model.Script(openaitest.Reply{Content: "好的。"})
	ctx := ctxFor(t, 60*time.Second)
	ts, sign := a.captured()
	const perReplica = 8
	statuses := make(chan int, 2*perReplica)
	ready := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 * perReplica {
		h := []*hermes{a, b}[i%2]
		m := dingtalktest.Message{MsgID: fmt.Sprintf("msg-%d", i), Text: "查一下工资", ConversationID: fmt.Sprintf("cid-%d", i),
			StaffID: fmt.Sprintf("staff%d", i), CorpID: corpID}
		req := dingtalktest.SignedRequest(h.url+"/dingtalk/hr-bot/callback", ts, sign, m.JSON())
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	close(ready)
	wg.Wait()
	close(statuses)
	got := map[int]int{}
	for s := range statuses {
		got[s]++
	}
	if got[http.StatusOK] != 1 || got[http.StatusUnauthorized] != 2*perReplica-1 {
		t.Errorf("statuses %v, want one 200 and %d 401", got, 2*perReplica-1)
	}
	a.waitIdle(ctx)
	if n := a.count(`SELECT count(*) FROM inbound_messages`); n != 1 {
		t.Errorf("%d inbound rows, want 1", n)
	}
	if n := a.refusals("replay"); n != 2*perReplica-1 {
		t.Errorf("%d replay refusals recorded, want %d", n, 2*perReplica-1)
	}
}

// A signed callback whose senderCorpId is not the robot's corp is refused
// and recorded; nothing is stored and no model is called.
func TestE2E_OtherCorpRefused(t *testing.T) {
	t.Parallel()
	h := start(t, "")
	m := dingtalktest.Message{MsgID: "msg-corp", Text: "我的工资条", ConversationID: "cid-x", StaffID: "zhangsan", CorpID: "dingothercorp"}
	if got := h.post(m, appSecret); got != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", got)
	}
	if n := h.count(`SELECT count(*) FROM inbound_messages`); n != 0 {
		t.Errorf("%d inbound rows stored", n)
	}
	if n := len(h.model.Requests()); n != 0 {
		t.Errorf("model called %d times", n)
	}
	if n := h.refusals("corp"); n != 1 {
		t.Errorf("%d corp refusals recorded, want 1", n)
	}
	// Its pair, refused, still cannot carry a message of our corp.
	ts, sign := h.captured()
	if got := h.send(ts, sign, m.JSON()); got != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", got)
	}
	m.MsgID, m.CorpID = "msg-ours", corpID
	if got := h.send(ts, sign, m.JSON()); got != http.StatusUnauthorized {
		t.Errorf("the refused message's pair with our corp: status %d, want 401", got)
	}
	if n := h.count(`SELECT count(*) FROM inbound_messages`); n != 0 {
		t.Errorf("%d inbound rows stored", n)
	}
}
