package gateway_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// TestRatingAnAnswer: 👍 after an answer rates that run (no run of its
// own, no history, the thanks as the reply); 👎 replaces it; a rating
// with nothing to rate says so, and another employee's 👍 rates nothing
// of zhangsan's; /help tells how to rate.
func TestRatingAnAnswer(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.Start(gateway.Deps{})
	f := &gatewaytest.Chat{H: h, Clock: time.Now}
	words := config.DefaultRatingMessages

	if got := f.Say(t, "zhangsan", "👍"); got != words.Nothing {
		t.Fatalf("👍 before any answer: %q, want %q", got, words.Nothing)
	}
	f.Say(t, "zhangsan", "我还有几天年假？")
	runs := h.Count(`SELECT count(*) FROM runs`)
	if got := f.Say(t, "zhangsan", "👍"); got != words.ThanksUp {
		t.Fatalf("👍 answered %q", got)
	}
	if n := h.Count(`SELECT count(*) FROM run_ratings r JOIN runs ON runs.id = r.run_id
	                 JOIN inbound_messages i ON i.id = runs.inbound_id WHERE r.rating = 1 AND i.text = '我还有几天年假？'`); n != 1 {
		t.Fatalf("%d 👍 on the answer, want 1", n)
	}
	if got := f.Say(t, "zhangsan", "👎"); got != words.ThanksDown {
		t.Fatalf("👎 answered %q", got)
	}
	if n := h.Count(`SELECT count(*) FROM run_ratings WHERE rating = -1`); n != 1 || h.Count(`SELECT count(*) FROM run_ratings`) != 1 {
		t.Fatalf("after 👎: %d ratings of -1 among %d, want the one rating replaced", n, h.Count(`SELECT count(*) FROM run_ratings`))
	}
	if n := h.Count(`SELECT count(*) FROM runs`); n != runs {
		t.Errorf("the ratings made %d runs", n-runs)
	}
	if n := h.Count(`SELECT count(*) FROM messages WHERE content LIKE '%👍%' OR content LIKE '%👎%' OR content LIKE '%评价%'`); n != 0 {
		t.Errorf("the ratings are in the conversation history: %d messages", n)
	}
	if got := f.Say(t, "lisi", "👍"); got != words.Nothing {
		t.Errorf("lisi's 👍 answered %q: lisi has no answer to rate", got)
	}
	if got := f.Say(t, "zhangsan", "/help"); !strings.Contains(got, words.Help) {
		t.Errorf("/help does not tell how to rate: %q", got)
	}
}
