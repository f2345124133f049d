package feishu

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
)

// FuzzCardAction decodes any card.action.trigger event body (what a tap's
// callback holds once verified) and answers it. No panic; a tap that is
// taken is sane: a click with the verified operator as its clicker, a card
// id and action within their bounds; anything else stores nothing; the
// answer to it is JSON.
func FuzzCardAction(f *testing.F) {
	a := newApp(AppSection{Name: "bot", Mode: ModeWebSocket, AppID: "cli_app", IDType: IDTypeOpenID},
		DefaultTimestampWindow, nil, channels.Env{Now: time.Now, Logger: slog.New(slog.DiscardHandler)})
	wrap := func(event string) []byte {
		return []byte(`{"schema":"2.0","header":{"event_id":"ev1","event_type":"card.action.trigger","app_id":"cli_app","tenant_key":"t"},"event":` + event + `}`)
	}
	f.Add(wrap(`{"operator":{"open_id":"ou_1"},"action":{"tag":"button","value":{"c":"0123456789abcdef","a":"ok"}},"context":{"open_chat_id":"oc_1"}}`))
	f.Add(wrap(`{"operator":{"open_id":"ou_1","user_id":"u1"},"action":{"value":{"c":1,"a":[]}}}`))
	f.Add(wrap(`{"operator":{},"action":{"value":"x"}}`))
	f.Add(wrap(`null`))
	f.Add([]byte(`{"schema":"2.0","header":{"event_type":"card.action.trigger","app_id":"other"},"event":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		in, ok, err := a.decodeEvent(context.Background(), body)
		if err != nil || !ok {
			if in.Click != nil && ok {
				t.Fatalf("refused tap carries a click: %+v", in)
			}
			return
		}
		if in.MsgType != channels.TypeClick {
			return // a message event: FuzzEventBody's
		}
		c := in.Click
		if c == nil || c.By == "" || c.By != in.Sender.UserID || c.Card == "" || c.Action == "" ||
			!channels.ValidClick(c.Card, c.Action) || in.MsgID == "" {
			t.Fatalf("accepted tap not sane: %+v %+v", in, c)
		}
		ans := &channels.CardAnswer{Outcome: channels.CardClaimed, Toast: c.Action,
			Card: &channels.Card{ID: c.Card, Title: c.Card, Text: string(body)}}
		if out := cardAnswer(ans); !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("answer not JSON: %q", out)
		}
	})
}
