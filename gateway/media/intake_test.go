package media_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// TestAttachmentsPerMinute: with media.attachments_per_minute 3, a
// sender's message of 3 screenshots is answered; a fourth attachment in
// the same minute is answered with messages.media.too_fast, its file never
// downloaded and no bytes stored; another sender is not held back; a
// minute later (on the gateway's clock) the same sender is answered again.
func TestAttachmentsPerMinute(t *testing.T) {
	t.Parallel()
	clock := &gatewaytest.JumpClock{}
	r := gatewaytest.NewBotRigDeps(t, "  vision: true", "media:\n  max_attachments: 3\n  attachments_per_minute: 3\n", gateway.Deps{Now: clock.Now})
	key := wecomtest.BotFileKey(fileKey)
	shot := func() string { return r.Files.Add(chantest.PNG(t, 8, 8), fileKey, "") }
	msg := func(id, user string) wecomtest.BotMessage {
		return wecomtest.BotMessage{MsgID: id, AIBotID: gatewaytest.WSBotID, ChatID: user, ChatType: "single", UserID: user}
	}
	tooFast := config.DefaultMediaMessages.TooFast

	three := []string{shot(), shot(), shot()}
	m := msg("intake-1", "zhaoliu")
	if got := r.Ask(t, m.Mixed(wecomtest.MixedText("这三张图"), wecomtest.MixedImageWithKey(three[0], key),
		wecomtest.MixedImageWithKey(three[1], key), wecomtest.MixedImageWithKey(three[2], key))); !strings.Contains(got, "收到") {
		t.Fatalf("three attachments within the limit: answer %q", got)
	}

	over := shot()
	if got := r.Ask(t, msg("intake-2", "zhaoliu").ImageWithKey(over, key)); got != tooFast {
		t.Fatalf("a fourth attachment within the minute: answer %q, want %q", got, tooFast)
	}
	if n := r.Files.Gets(over); n != 0 {
		t.Errorf("the refused attachment was downloaded %d times", n)
	}
	if n := r.H.Count(`SELECT count(*) FROM inbound_media m JOIN inbound_messages i ON i.id = m.inbound_id
		WHERE i.platform_msg_id = 'intake-2' AND m.error = 'too_fast' AND m.data IS NULL AND m.size = 0`); n != 1 {
		t.Errorf("%d too_fast rows without bytes for the refused message, want 1", n)
	}

	if got := r.Ask(t, msg("intake-3", "sunqi").ImageWithKey(shot(), key)); !strings.Contains(got, "收到") {
		t.Errorf("another sender: answer %q", got)
	}

	clock.Jump(time.Minute + time.Second)
	later := shot()
	if got := r.Ask(t, msg("intake-4", "zhaoliu").ImageWithKey(later, key)); !strings.Contains(got, "收到") {
		t.Fatalf("a minute later: answer %q", got)
	}
	if n := r.Files.Gets(later); n != 1 {
		t.Errorf("the attachment a minute later was downloaded %d times, want once", n)
	}
	if calls := r.Calls(); len(calls) != 3 {
		t.Errorf("%d model calls, want 3 (none for the refused message)", len(calls))
	}
}
