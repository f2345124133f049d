package feishu_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/feishu/feishutest"
)

// decoded posts m as Feishu does and returns the Inbound the sink got.
func (r *eventRig) decoded(t *testing.T, m feishutest.Message) channels.Inbound {
	t.Helper()
	if status, body := r.post(t, feishutest.EventJSON(m)); status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	acc := r.sink.Accepted()
	for i := len(acc) - 1; i >= 0; i-- {
		if acc[i].MsgID == m.MessageID {
			return acc[i]
		}
	}
	t.Fatalf("%s not accepted", m.MessageID)
	return channels.Inbound{}
}

// ref is a Feishu MediaRef's Ref.
type ref struct {
	MessageID string `json:"message_id"`
	FileKey   string `json:"file_key"`
	Type      string `json:"type"`
}

// describeParts renders parts as "text:…" and "kind:key/type name" lines,
// checking that each attachment names msgID, its message.
func describeParts(t *testing.T, msgID string, parts []channels.Part) string {
	t.Helper()
	var out []string
	for _, p := range parts {
		if p.Media == nil {
			out = append(out, "text:"+p.Text)
			continue
		}
		var r ref
		if err := json.Unmarshal(p.Media.Ref, &r); err != nil || r.MessageID != msgID {
			t.Fatalf("ref %s (%v): want the message %s", p.Media.Ref, err, msgID)
		}
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s:%s/%s %s", p.Media.Kind, r.FileKey, r.Type, p.Media.Name)))
	}
	return strings.Join(out, " | ")
}

// TestMediaMessagesDecoded: each message type reaches the sink with its
// type, text and parts in the order the user wrote them.
func TestMediaMessagesDecoded(t *testing.T) {
	r := newEventRig(t, "")
	longName := strings.Repeat("长", 100) + ".pdf" // 304 bytes
	sticker := message("om_s", "p2p", "")
	sticker.Type, sticker.Content = "sticker", `{"file_key":"file_s"}`
	cases := []struct {
		name    string
		msg     feishutest.Message
		msgType string
		text    string
		parts   string
	}{
		{"Image", message("om_i", "p2p", "").Image("img_v3_1"), channels.TypeMedia, "", "image:img_v3_1/image"},
		{"File", message("om_f", "p2p", "").File("file_v3_1", `..\..//etc/报销单.xlsx`), channels.TypeMedia, "",
			"file:file_v3_1/file 报销单.xlsx"},
		{"Audio", message("om_a", "p2p", "").Audio("file_v3_a", 3*time.Second), channels.TypeMedia, "", "voice:file_v3_a/file"},
		{"Video", message("om_v", "p2p", "").Video("file_v3_v", "img_cover", "演示.mp4"), channels.TypeMedia, "",
			"video:file_v3_v/file 演示.mp4"},
		{"PostWithImages", message("om_p1", "p2p", "").Post("报错",
			[]feishutest.PostElement{feishutest.PostText("打开就这样："), feishutest.PostImage("img_a")},
			[]feishutest.PostElement{feishutest.PostText("第二张")},
			[]feishutest.PostElement{feishutest.PostImage("img_b")},
			[]feishutest.PostElement{feishutest.PostVideo("file_v", "img_vc")}),
			channels.TypeMedia, "报错\n打开就这样：\n第二张",
			"text:报错\n打开就这样： | image:img_a/image | text:第二张 | image:img_b/image | video:file_v/file"},
		{"PostByLocale", message("om_p2", "p2p", "").LocalePost("zh_cn", "",
			[]feishutest.PostElement{feishutest.PostText("看图")}, []feishutest.PostElement{feishutest.PostImage("img_c")}),
			channels.TypeMedia, "看图", "text:看图 | image:img_c/image"},
		{"PostWithoutImages", message("om_p3", "p2p", "").Post("请假",
			[]feishutest.PostElement{feishutest.PostText("明天"), feishutest.PostLink("流程", "https://oa.example/leave")}),
			channels.TypeText, "请假\n明天流程 (https://oa.example/leave)", ""},
		{"PostByLocaleWithoutImages", message("om_p4", "p2p", "").LocalePost("en_us", "Leave",
			[]feishutest.PostElement{feishutest.PostText("tomorrow")}), channels.TypeText, "Leave\ntomorrow", ""},
		{"Sticker", sticker, "sticker", "", ""}, // not downloadable: answered as unsupported
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := r.decoded(t, c.msg)
			if in.MsgType != c.msgType || in.Text != c.text {
				t.Fatalf("MsgType %q Text %q, want %q %q", in.MsgType, in.Text, c.msgType, c.text)
			}
			if got := describeParts(t, c.msg.MessageID, in.Parts); got != c.parts {
				t.Fatalf("parts\n %s\nwant\n %s", got, c.parts)
			}
		})
	}
	t.Run("LongFileName", func(t *testing.T) {
		in := r.decoded(t, message("om_fl", "p2p", "").File("file_l", longName))
		name := in.Parts[0].Media.Name
		if len(name) > 255 || !utf8.ValidString(name) || !strings.HasPrefix(longName, name) || len(name) < 250 {
			t.Fatalf("name of %d bytes %q, want the name cut on a rune within 255 bytes", len(name), name)
		}
	})
}

// TestMediaPostMentions: in a group, a post with an image addresses the
// bot by its mention; the mention is stripped from the text parts and
// other mentions named.
func TestMediaPostMentions(t *testing.T) {
	r := newEventRig(t, "")
	bot := feishutest.Mention{Key: "@_user_1", OpenID: r.api.BotOpenID, Name: "Hermes"}
	lisi := feishutest.Mention{Key: "@_user_2", OpenID: "ou_lisi", UserID: "lisi", Name: "李四"}
	m := message("om_gp", "group", "", bot, lisi).Post("",
		[]feishutest.PostElement{feishutest.PostAt("@_user_1"), feishutest.PostText(" 这是什么报错？"), feishutest.PostImage("img_g")},
		[]feishutest.PostElement{feishutest.PostAt("@_user_2"), feishutest.PostText(" 也遇到了")})
	r.post(t, feishutest.EventJSON(m))
	acc := r.sink.Answered()
	if len(acc) != 1 {
		t.Fatalf("answered %d, want the post that mentions the bot", len(acc))
	}
	in := acc[0]
	if !in.Mentioned || in.MsgType != channels.TypeMedia || in.Text != "这是什么报错？\n@李四 也遇到了" {
		t.Fatalf("mentioned %v, %s %q", in.Mentioned, in.MsgType, in.Text)
	}
	if got, want := describeParts(t, "om_gp", in.Parts), "text:这是什么报错？ | image:img_g/image | text:@李四 也遇到了"; got != want {
		t.Fatalf("parts %s, want %s", got, want)
	}

	// An image alone in a group is not addressed to the bot: stored, not answered.
	r.post(t, feishutest.EventJSON(message("om_gi", "group", "").Image("img_x")))
	if n := len(r.sink.Answered()); n != 1 {
		t.Fatalf("answered %d, want still 1", n)
	}
}

// TestReplyKeepsParentForTheWorker: a reply's parent is named in ReplyTo
// and not read while Feishu waits for the ack.
func TestReplyKeepsParentForTheWorker(t *testing.T) {
	r := newEventRig(t, "")
	in := r.decoded(t, message("om_r", "p2p", "这个怎么处理？").Reply("om_parent", ""))
	var rt struct {
		MessageID string `json:"message_id"`
		ParentID  string `json:"parent_id"`
	}
	if err := json.Unmarshal(in.ReplyTo, &rt); err != nil || rt.ParentID != "om_parent" || rt.MessageID != "om_r" {
		t.Fatalf("ReplyTo %s, want parent_id om_parent", in.ReplyTo)
	}
	if in.Quote != nil || in.Text != "这个怎么处理？" || r.api.MessageGets() != 0 {
		t.Fatalf("quote %+v, text %q, %d message reads: the event carries no quote, and none is read at ack",
			in.Quote, in.Text, r.api.MessageGets())
	}
	plain := r.decoded(t, message("om_nr", "p2p", "hi"))
	if strings.Contains(string(plain.ReplyTo), "parent_id") {
		t.Fatalf("ReplyTo %s of a message that is no reply names a parent", plain.ReplyTo)
	}
}

func TestLongConnectionDecodesMedia(t *testing.T) {
	sink := chantest.NewSink()
	api := runConnection(t, sink)
	ctx := withTimeout(t, 5*time.Second)
	if err := api.PushEvent(ctx, "frame-m", feishutest.EventJSON(message("om_wi", "p2p", "").Image("img_w")), 1); err != nil {
		t.Fatal(err)
	}
	if err := sink.Wait(ctx, "the image", func() bool { return len(sink.Answered()) == 1 }); err != nil {
		t.Fatal(err)
	}
	in := sink.Answered()[0]
	if got := describeParts(t, "om_wi", in.Parts); in.MsgType != channels.TypeMedia || got != "image:img_w/image" {
		t.Fatalf("%s %s", in.MsgType, got)
	}
}

// mediaRef builds a MediaRef as decodeEvent does.
func mediaRef(kind, msgID, key, typ, name string) channels.MediaRef {
	b, _ := json.Marshal(ref{MessageID: msgID, FileKey: key, Type: typ})
	return channels.MediaRef{Kind: kind, Ref: b, Name: name}
}

// classified names the sentinel err wraps, "transient" for none.
func classified(err error) string {
	for _, s := range []error{channels.ErrMediaExpired, channels.ErrMediaRefused, channels.ErrMediaTooLarge, channels.ErrMediaUndecryptable} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	if err == nil {
		return "nil"
	}
	return "transient"
}

// TestFetchMedia: the parts of received messages fetch their bytes, with
// the name Feishu sends (or the message's).
func TestFetchMedia(t *testing.T) {
	r := newEventRig(t, "")
	ctx := withTimeout(t, 10*time.Second)
	png := []byte("\x89PNG\r\n\x1a\n pretend image bytes")
	xlsx := []byte("PK\x03\x04 pretend spreadsheet")
	amr := []byte("#!AMR\n pretend voice")
	r.api.AddResource(feishutest.Resource{MessageID: "om_i", Key: "img_1", Type: "image", Data: png, ContentType: "image/png"})
	r.api.AddResource(feishutest.Resource{MessageID: "om_f", Key: "file_1", Type: "file", Data: xlsx, Name: "报销单 2024.xlsx"})
	r.api.AddResource(feishutest.Resource{MessageID: "om_a", Key: "file_a", Type: "file", Data: amr})

	for _, c := range []struct {
		msg  feishutest.Message
		data []byte
		name string
	}{
		{message("om_i", "p2p", "").Image("img_1"), png, ""},
		{message("om_f", "p2p", "").File("file_1", "报销单.xlsx"), xlsx, "报销单 2024.xlsx"}, // Content-Disposition wins
		{message("om_a", "p2p", "").Audio("file_a", time.Second), amr, ""},             // type=file, or the fake refuses
	} {
		in := r.decoded(t, c.msg)
		att, err := r.ch.FetchMedia(ctx, testAccount, *in.Parts[0].Media, 1<<20)
		if err != nil || !bytes.Equal(att.Data, c.data) || att.Name != c.name {
			t.Fatalf("%s: %q %q %v, want %q %q", c.msg.MessageID, att.Data, att.Name, err, c.data, c.name)
		}
	}

	t.Run("NameFromTheMessage", func(t *testing.T) {
		r.api.AddResource(feishutest.Resource{MessageID: "om_n", Key: "file_n", Type: "file", Data: xlsx})
		att, err := r.ch.FetchMedia(ctx, testAccount, mediaRef(channels.MediaFile, "om_n", "file_n", "file", "工资条.xlsx"), 1<<20)
		if err != nil || att.Name != "工资条.xlsx" {
			t.Fatalf("%q %v, want the MediaRef's name", att.Name, err)
		}
	})
	t.Run("AJSONFile", func(t *testing.T) {
		// A file of JSON is served as JSON: not Feishu's error envelope, so bytes.
		data := []byte(`{"name":"config","items":[1,2]}`)
		r.api.AddResource(feishutest.Resource{MessageID: "om_j", Key: "file_j", Type: "file", Data: data, ContentType: "application/json"})
		att, err := r.ch.FetchMedia(ctx, testAccount, mediaRef(channels.MediaFile, "om_j", "file_j", "file", "c.json"), 1<<20)
		if err != nil || !bytes.Equal(att.Data, data) {
			t.Fatalf("%q %v", att.Data, err)
		}
	})
	t.Run("RefreshesAnInvalidToken", func(t *testing.T) {
		before := r.api.TokenRequests()
		r.api.InvalidateTokens()
		att, err := r.ch.FetchMedia(ctx, testAccount, mediaRef(channels.MediaImage, "om_i", "img_1", "image", ""), 1<<20)
		if err != nil || !bytes.Equal(att.Data, png) || r.api.TokenRequests() != before+1 {
			t.Fatalf("%v, %d token requests after %d: want one refresh", err, r.api.TokenRequests(), before)
		}
	})
}

// TestFetchMediaErrorsClassified: each way Feishu refuses a file maps to
// the sentinel the gateway answers by; a JSON error is never taken for
// the file's bytes.
func TestFetchMediaErrorsClassified(t *testing.T) {
	r := newEventRig(t, "")
	ctx := withTimeout(t, 10*time.Second)
	add := func(key string, data []byte) channels.MediaRef {
		r.api.AddResource(feishutest.Resource{MessageID: "om_e", Key: key, Type: "file", Data: data})
		return mediaRef(channels.MediaFile, "om_e", key, "file", "")
	}
	data := []byte("%PDF-1.7 pretend")
	expired := add("file_expired", data)
	r.api.Expire("file_expired")
	add("file_t", data) // a file, asked for as an image below
	fail := func(key string, status, code int) channels.MediaRef {
		ref := add(key, data)
		r.api.FailResource(key, status, code)
		return ref
	}
	cases := []struct {
		name  string
		ref   channels.MediaRef
		limit int64
		want  error // nil: transient
	}{
		{"Expired", expired, 1 << 20, channels.ErrMediaExpired},
		{"NotInMessage", mediaRef(channels.MediaFile, "om_e", "file_unknown", "file", ""), 1 << 20, channels.ErrMediaExpired},
		{"BotNotInChat", fail("file_refused", 400, feishutest.CodeAppNotInChat), 1 << 20, channels.ErrMediaRefused},
		{"NoScope", fail("file_scope", 400, feishutest.CodeNoScope), 1 << 20, channels.ErrMediaRefused},
		{"Forbidden", fail("file_403", 403, 0), 1 << 20, channels.ErrMediaRefused},
		{"NotFound", fail("file_404", 404, 0), 1 << 20, channels.ErrMediaExpired},
		{"JSONErrorOn200", fail("file_200", 200, feishutest.CodeAppNotInChat), 1 << 20, channels.ErrMediaRefused},
		{"UnknownJSONErrorOn200", fail("file_200u", 200, 1234567), 1 << 20, nil},
		{"OverFeishusLimit", fail("file_huge", 400, 234037), 1 << 20, channels.ErrMediaTooLarge},
		{"TooLarge", add("file_big", bytes.Repeat([]byte("a"), 4096)), 1024, channels.ErrMediaTooLarge},
		{"ServerError", fail("file_500", 500, 0), 1 << 20, nil},
		{"TypeMismatch", mediaRef(channels.MediaImage, "om_e", "file_t", "image", ""), 1 << 20, channels.ErrMediaRefused},
		{"WrongType", mediaRef(channels.MediaFile, "om_e", "file_expired", "video", ""), 1 << 20, channels.ErrMediaRefused},
		{"BadRef", channels.MediaRef{Kind: channels.MediaFile, Ref: []byte(`"x"`)}, 1 << 20, channels.ErrMediaRefused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			att, err := r.ch.FetchMedia(ctx, testAccount, c.ref, c.limit)
			want := "transient"
			if c.want != nil {
				want = c.want.Error()
			}
			if got := classified(err); got != want || att.Data != nil {
				t.Fatalf("err %v (%s), %d bytes; want %s and none", err, got, len(att.Data), want)
			}
		})
	}
	t.Run("UnknownAccount", func(t *testing.T) {
		if _, err := r.ch.FetchMedia(ctx, "no-such-app", expired, 1<<20); !errors.Is(err, channels.ErrMediaRefused) {
			t.Fatalf("err %v", err)
		}
	})
	if n := r.api.ResourceGets("file_big"); n != 1 {
		t.Fatalf("%d requests for one fetch", n)
	}
}

// TestQuotedMessage: a reply's parent is read as its text, for the same
// chat only.
func TestQuotedMessage(t *testing.T) {
	r := newEventRig(t, "")
	ctx := withTimeout(t, 10*time.Second)
	lisi := feishutest.Mention{Key: "@_user_2", OpenID: "ou_lisi", UserID: "lisi", Name: "李四"}
	r.api.AddMessage(message("om_parent", "group", "@_user_2 VPN 报错 809", lisi))
	r.api.AddMessage(message("om_post", "group", "").Post("",
		[]feishutest.PostElement{feishutest.PostText("截图如下")}, []feishutest.PostElement{feishutest.PostImage("img_q")}))
	bots := message("om_bot", "group", "年假还剩 5 天。")
	bots.SenderType = "app"
	r.api.AddMessage(bots)
	r.api.AddMessage(message("om_gone", "group", "已撤回"))
	r.api.DeleteMessage("om_gone")
	r.api.AddMessage(message("om_img", "group", "").Image("img_s"))

	for _, c := range []struct {
		name, id, chat string
		want           *channels.Quote
	}{
		{"SameChat", "om_parent", testChatGroup, &channels.Quote{SenderID: testUserID, Text: "@李四 VPN 报错 809"}},
		{"OtherChat", "om_parent", "oc_other", nil},
		{"PostWithImage", "om_post", testChatGroup, &channels.Quote{SenderID: testUserID, Text: "截图如下\n[图片]"}},
		{"TheBotsOwn", "om_bot", testChatGroup, &channels.Quote{Text: "年假还剩 5 天。"}},
		{"Deleted", "om_gone", testChatGroup, nil},
		{"ImageOnly", "om_img", testChatGroup, &channels.Quote{SenderID: testUserID, Text: "[图片]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, err := r.ch.QuotedMessage(ctx, testAccount, c.id, c.chat)
			if err != nil || (q == nil) != (c.want == nil) || (q != nil && *q != *c.want) {
				t.Fatalf("quote %+v, %v; want %+v", q, err, c.want)
			}
		})
	}
	t.Run("UnknownMessage", func(t *testing.T) {
		if q, err := r.ch.QuotedMessage(ctx, testAccount, "om_nowhere", testChatGroup); err == nil || q != nil {
			t.Fatalf("quote %+v, %v; want Feishu's error", q, err)
		}
	})
	t.Run("UnknownAccount", func(t *testing.T) {
		if _, err := r.ch.QuotedMessage(ctx, "no-such-app", "om_parent", testChatGroup); !errors.Is(err, channels.ErrUnknownAccount) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("ResolveQuoteOfAReply", func(t *testing.T) {
		bot := feishutest.Mention{Key: "@_user_1", OpenID: r.api.BotOpenID, Name: "Hermes"}
		in := r.decoded(t, message("om_ask", "group", "@_user_1 这个怎么处理？", bot).Reply("om_parent", ""))
		q, err := r.ch.ResolveQuote(ctx, in)
		if err != nil || q == nil || q.Text != "@李四 VPN 报错 809" {
			t.Fatalf("quote %+v, %v", q, err)
		}
		before := r.api.MessageGets()
		plain := r.decoded(t, message("om_plain", "p2p", "hi"))
		if q, err := r.ch.ResolveQuote(ctx, plain); q != nil || err != nil || r.api.MessageGets() != before {
			t.Fatalf("a message that is no reply: quote %+v, %v, %d reads", q, err, r.api.MessageGets()-before)
		}
	})
}
