package dingtalk

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// fuzzRobot is a robot with every option that changes decoding set.
func fuzzRobot() *robot {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	return &robot{cfg: RobotSection{Name: "hr-bot", CorpID: testCorpID, RobotName: "HR助手", CardTemplateID: "tpl",
		APIBaseURL: DefaultAPIBaseURL, OAPIBaseURL: DefaultOAPIBaseURL}, now: func() time.Time { return now }}
}

// messageSeeds are robot messages as DingTalk sends them, and near misses.
func messageSeeds() [][]byte {
	single := dingtalktest.Message{MsgID: "msg-1", Text: "我还有几天年假？", ConversationID: "cid", StaffID: "zhangsan", Nick: "张三",
		CorpID: testCorpID, SessionWebhook: DefaultOAPIBaseURL + "/robot/sendBySession?session=s", WebhookExpiresAt: time.UnixMilli(1700000000000)}
	group := dingtalktest.Message{MsgID: "msg-2", Text: "@HR助手 帮我查工资条", Group: true, InAtList: true, ConversationID: "cid-g", StaffID: "lisi"}
	return [][]byte{
		single.JSON(), group.JSON(),
		group.RichText(dingtalktest.RichItem{Text: "@HR助手 这个报错"}, dingtalktest.RichItem{DownloadCode: "c1"}, dingtalktest.RichItem{Text: "怎么办"}),
		single.File("c2", `..\报销单.pdf`), single.Audio("c3", "帮我请假", 2000), single.Audio("c4", "", 2000), single.Video("c5", 9000),
		[]byte(`{"msgId":"m","msgtype":"file","conversationId":"c","senderStaffId":"u","content":{"downloadCode":7}}`),
		[]byte(`{"msgId":"m","msgtype":"richText","conversationId":"c","senderStaffId":"u","content":{"richText":[{"type":"picture"},{"text":""}]}}`),
		[]byte(`{"msgId":"m","msgtype":"richText","conversationId":"c","conversationType":"2","senderStaffId":"u",` +
			`"content":{"richText":[{"text":"请假"},{"downloadCode":"x"},{"text":"流程"}]},"atUsers":[{"dingtalkId":"$:LWCP_v1:$robot"}],"chatbotUserId":"$:LWCP_v1:$robot"}`),
		[]byte(`{"msgId":"m","msgtype":"picture","conversationId":"c","senderStaffId":"u","content":{"downloadCode":"x"}}`),
		[]byte(`{"msgId":"m","msgtype":"text","conversationId":"c","senderStaffId":"u","senderCorpId":"dingothercorp"}`),
		[]byte(`{"msgId":"m","msgtype":"text","conversationId":"c"}`),
		[]byte(`{"msgId":"m","msgtype":"text","conversationId":"c","senderStaffId":"u","sessionWebhook":"http://169.254.169.254/"}`),
		[]byte(`{"msgId":1}`), []byte(`[]`), []byte(`null`), []byte(``),
	}
}

// maxExpansion bounds decoded bytes per input byte: encoding/json replaces
// each invalid UTF-8 byte with U+FFFD, three bytes.
const maxExpansion = 3

// checkMessage asserts what a decode of data may give: ErrMalformed or
// ErrCorp, nothing, or an Inbound built from data alone and no bigger.
func checkMessage(t *testing.T, r *robot, data []byte) {
	in, ok, err := r.decodeMessage(data)
	if err != nil {
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrCorp) {
			t.Fatalf("error %v wraps neither ErrMalformed nor ErrCorp", err)
		}
		return
	}
	if !ok {
		return
	}
	if in.Channel != ChannelName || in.Account != r.cfg.Name || in.MsgID == "" || in.ChatID == "" || in.MsgType == "" || in.Sender.UserID == "" {
		t.Fatalf("incomplete inbound %+v", in)
	}
	if in.Sender.CorpID != r.cfg.CorpID {
		t.Fatalf("sender corp %q, want the robot's %q", in.Sender.CorpID, r.cfg.CorpID)
	}
	if in.ChatType != channels.ChatSingle && in.ChatType != channels.ChatGroup || in.Mentioned && in.ChatType != channels.ChatGroup {
		t.Fatalf("chat type %q, mentioned %v", in.ChatType, in.Mentioned)
	}
	// The text is pieces of the body: no decoded string is longer than
	// maxExpansion times it.
	for _, s := range []string{in.MsgID, in.ChatID, in.Sender.UserID, in.Sender.Name, in.Text} {
		if len(s) > maxExpansion*len(data) {
			t.Fatalf("a decoded field of %d bytes from a %d-byte body", len(s), len(data))
		}
	}
	if in.Nonce != "" {
		t.Fatal("a body set the nonce")
	}
	checkParts(t, in, len(data))
	var rt replyTo
	if err := json.Unmarshal(in.ReplyTo, &rt); err != nil {
		t.Fatalf("reply address %s: %v", in.ReplyTo, err)
	}
	if rt.Webhook != "" && !r.trustedWebhook(rt.Webhook) {
		t.Fatalf("untrusted webhook %q kept", rt.Webhook)
	}
	if rt.User != in.Sender.UserID || rt.Conversation != in.ChatID || rt.Card != outTrackID(r.cfg.Name, in.MsgID) {
		t.Fatalf("reply address %+v does not match %+v", rt, in)
	}
}

// checkParts asserts that in is a text message or a media message whose
// Text is its text parts joined, each attachment fetchable by a
// downloadCode and named by a bounded name that is no path.
func checkParts(t *testing.T, in channels.Inbound, size int) {
	t.Helper()
	if (in.MsgType == channels.TypeMedia) != (len(in.Parts) > 0) {
		t.Fatalf("msgtype %q with %d parts", in.MsgType, len(in.Parts))
	}
	var text []string
	for _, p := range in.Parts {
		if p.Media == nil {
			if p.Text == "" {
				t.Fatal("an empty text part")
			}
			text = append(text, p.Text)
			continue
		}
		var ref fileRef
		if err := json.Unmarshal(p.Media.Ref, &ref); err != nil || ref.DownloadCode == "" || len(ref.DownloadCode) > maxExpansion*size {
			t.Fatalf("media ref %s: %v", p.Media.Ref, err)
		}
		switch p.Media.Kind {
		case channels.MediaImage, channels.MediaFile, channels.MediaVoice, channels.MediaVideo:
		default:
			t.Fatalf("media kind %q", p.Media.Kind)
		}
		if n := p.Media.Name; len(n) > channels.MaxFileNameBytes || strings.ContainsAny(n, `/\`) || !utf8.ValidString(n) {
			t.Fatalf("file name %q", n)
		}
	}
	if in.MsgType == channels.TypeMedia && in.Text != strings.Join(text, "\n") {
		t.Fatalf("text %q is not the parts' %q", in.Text, text)
	}
}

// The HTTP callback body, after the signature check.
func FuzzDecodeMessage(f *testing.F) {
	for _, s := range messageSeeds() {
		f.Add(s)
	}
	r := fuzzRobot()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxCallbackBytes {
			t.Skip("serveCallback refuses bodies over maxCallbackBytes before decoding")
		}
		checkMessage(t, r, data)
	})
}

// A Stream frame as read from the socket, and the robot message it may
// carry.
func FuzzStreamFrame(f *testing.F) {
	frameOf := func(typ, topic, data string) []byte {
		b, _ := json.Marshal(map[string]any{"specVersion": "1.0", "type": typ, "data": data,
			"headers": map[string]string{"topic": topic, "messageId": "id-1", "contentType": "application/json", "time": "1700000000000"}})
		return b
	}
	for _, s := range messageSeeds() {
		f.Add(frameOf(frameCallback, botTopic, string(s)))
	}
	f.Add(frameOf(frameSystem, topicPing, `{"opaque":"abc"}`))
	f.Add(frameOf(frameSystem, topicDisconnect, `{"reason":"restart"}`))
	f.Add(frameOf("EVENT", "/v1.0/card/instances/callback", `{}`))
	f.Add([]byte(`{"type":"CALLBACK","headers":{"topic":1}}`))
	f.Add([]byte(`{"type":"SYSTEM","headers":null,"data":null}`))
	r := fuzzRobot()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFrameBytes {
			t.Skip("the socket's read limit refuses frames over maxFrameBytes")
		}
		fr, kind, err := decodeFrame(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if kind < frameOther || kind > frameMessage {
			t.Fatalf("kind %d", kind)
		}
		want := frameKinds[[2]string{fr.Type, fr.Headers["topic"]}]
		if kind != want {
			t.Fatalf("kind %d for type %q topic %q, want %d", kind, fr.Type, fr.Headers["topic"], want)
		}
		size := len(fr.Data) + len(fr.Type) + len(fr.SpecVersion)
		for k, v := range fr.Headers {
			size += len(k) + len(v)
		}
		if size > maxExpansion*len(data) {
			t.Fatalf("decoded %d bytes from a %d-byte frame", size, len(data))
		}
		// Every frame is answered: its ack must encode whatever the id.
		if _, err := json.Marshal(ack{Code: 200, Headers: map[string]string{"messageId": fr.Headers["messageId"]}, Data: fr.Data}); err != nil {
			t.Fatal(err)
		}
		if kind == frameMessage {
			checkMessage(t, r, []byte(fr.Data))
		}
	})
}

// The seeds themselves decode as expected, so the targets start from real
// frames rather than only from errors.
func TestFuzzSeedsDecode(t *testing.T) {
	r := fuzzRobot()
	var decoded int
	for _, s := range messageSeeds() {
		if _, ok, err := r.decodeMessage(s); err == nil && ok {
			decoded++
		}
	}
	if decoded < 4 {
		t.Errorf("%d seeds decode to a message, want at least 4", decoded)
	}
	if _, kind, err := decodeFrame([]byte(`{"type":"SYSTEM","headers":{"topic":"ping","messageId":"x"}}`)); err != nil || kind != framePing {
		t.Errorf("ping frame: kind %d, %v", kind, err)
	}
}
