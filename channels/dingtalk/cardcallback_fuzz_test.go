package dingtalk

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// FuzzCardCallback decodes any card callback frame data (what a tap's
// frame carries on the card topic) and answers it. No panic; an error
// wraps ErrMalformed or ErrCorp; a tap that is taken is sane: a click by
// the callback's userId, of the robot's corp, on the card its outTrackId
// names, an action within bounds; anything else carries no click; the
// answer is JSON with a response.
func FuzzCardCallback(f *testing.F) {
	r := fuzzRobot()
	tap := dingtalktest.Tap{OutTrackID: cardTrackPrefix + "0123456789abcdef", UserID: "zhangsan", CorpID: testCorpID, Action: "ok"}
	f.Add(tap.JSON("IM_GROUP", "cid-group"))
	f.Add(tap.JSON("IM_ROBOT", "zhangsan"))
	other := tap
	other.CorpID = "dingothercorp"
	f.Add(other.JSON("IM_ROBOT", "zhangsan"))
	aiCard := tap
	aiCard.OutTrackID = "hermes-0123"
	f.Add(aiCard.JSON("IM_ROBOT", "zhangsan"))
	f.Add([]byte(`{"outTrackId":"hermes-card-1","userId":"u","content":"{\"cardPrivateData\":{\"actionIds\":[\"no\"],\"params\":{}}}"}`))
	f.Add([]byte(`{"outTrackId":"hermes-card-1","userId":"u","userIdType":2,"content":"{}"}`))
	f.Add([]byte(`{"outTrackId":"hermes-card-1","userId":"u","content":"{\"cardPrivateData\":{\"params\":{\"action\":7}}}"}`))
	long := tap
	long.Action = "ok-but-far-too-long"
	f.Add(long.JSON("IM_ROBOT", "zhangsan"))
	// Found by the fuzzer: invalid UTF-8 in the outTrackId, which
	// encoding/json turns into U+FFFD.
	f.Add([]byte("{\"outTrackId\":\"hermes-card-0123`\xe4\xf5\xe5\xb1\x9a456789abcdef\",\"userId\":\"zhangsan\",\"spaceId\":\"zhangsan\",\"spaceType\":\"IM_ROBOT\",\"corpId\":\"dingcorp0001\",\"content\":\"{\\\"cardPrivateData\\\":{\\\"actionIds\\\":[\\\"hermes_button\\\"],\\\"params\\\":{\\\"action\\\":\\\"ok\\\"}}}\"}"))
	f.Add([]byte(`{"outTrackId":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, ok, err := r.decodeCardCallback(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrCorp) {
				t.Fatalf("error %v wraps neither ErrMalformed nor ErrCorp", err)
			}
			if in.Click != nil || ok {
				t.Fatalf("refused tap carries a click: %+v", in)
			}
			return
		}
		if !ok {
			if in.Click != nil {
				t.Fatalf("tap not taken carries a click: %+v", in)
			}
			return
		}
		c := in.Click
		if c == nil || in.MsgType != channels.TypeClick || c.By == "" || c.By != in.Sender.UserID || in.Sender.CorpID != r.cfg.CorpID ||
			!channels.ValidClick(c.Card, c.Action) ||
			!strings.Contains(string(data), c.Card) || in.MsgID == "" || in.Channel != ChannelName || in.Account != r.cfg.Name {
			t.Fatalf("taken tap not sane: %+v %+v", in, c)
		}
		for _, outcome := range []string{channels.CardClaimed, channels.CardNotYours} {
			ans := &channels.CardAnswer{Outcome: outcome, Toast: c.Action, Card: &channels.Card{ID: c.Card, Title: c.By, Text: string(data),
				Buttons: []channels.Button{{Action: c.Action, Label: c.Action}}}}
			out := cardAnswer(ans)
			var v struct {
				Response map[string]json.RawMessage `json:"response"`
			}
			if !utf8.Valid(out) || json.Unmarshal(out, &v) != nil || v.Response == nil {
				t.Fatalf("answer not JSON with a response: %q", out)
			}
		}
	})
}
