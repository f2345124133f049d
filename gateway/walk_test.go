//go:build walk

package gateway_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/memory"
)

// TestWalk answers HERMES_WALK_MESSAGES (default 1) group messages
// @-mentioning a WeCom AI bot on its long connection, one after the other,
// each from frame to the finished reply. It measures the walk of one
// message through the code (issue 34): run it with coverage counts for 1
// and for 2 messages; the files whose counts differ are the ones one more
// message touches (.ci/walk does both and prints them).
func TestWalk(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HERMES_WALK_MESSAGES"))
	n = max(n, 1)
	h := gatewaytest.New(t)
	ws := wecomtest.NewBotWSServer(t, gatewaytest.WSBotID, gatewaytest.WSSecret)
	// The reports' scan ticks on its own timer: once an hour here, so that
	// it does not tick in one run and not in the other.
	h.StartExtra(gatewaytest.WSBotYAML(ws.URL())+"reports:\n  scan_interval: 1h\n", gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, time.Minute)
	if _, err := ws.WaitSubscriptions(ctx, 1, true); err != nil {
		t.Fatal(err)
	}
	// The leader's start-up jobs (each sweep and purge runs once when the
	// leader starts) are not a message's walk: wait until they have run,
	// so that both runs hold them once and they cancel out. The leader
	// inserts them in one batch.
	gatewaytest.WaitFor(t, ctx, func() bool {
		return h.Count(`SELECT count(*) FROM river_job WHERE NOT (kind = ANY($1))`, []string{
			gateway.ProcessInboundArgs{}.Kind(), gateway.DeliverReplyArgs{}.Kind(), memory.LearnArgs{}.Kind()}) > 0
	})
	h.WaitIdle(ctx)
	for i := range n {
		m := wecomtest.BotMessage{MsgID: fmt.Sprintf("walk-%d", i), AIBotID: gatewaytest.WSBotID, ChatID: "grp-walk", ChatType: "group", UserID: "lisi"}
		reqID, err := ws.PushMessage(ctx, m.Text("@Hermes 我还有几天年假？"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ws.WaitFrame(ctx, func(f wecomtest.BotFrame) bool { return f.ReqID == reqID && f.Reply.Stream.Finish }); err != nil {
			t.Fatal(err)
		}
		h.WaitIdle(ctx)
	}
}
