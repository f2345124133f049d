package dingtalk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/dingtalk/dingtalktest"
)

// media is the part of an attachment with downloadCode code.
func media(kind, code, name string) channels.Part {
	ref, _ := json.Marshal(map[string]string{"downloadCode": code})
	return channels.Part{Media: &channels.MediaRef{Kind: kind, Ref: ref, Name: name}}
}

func text(s string) channels.Part { return channels.Part{Text: s} }

func partsJSON(p []channels.Part) string {
	b, _ := json.Marshal(p)
	return string(b)
}

// TestDecodeAttachments: each kind of message becomes its MsgType, Text
// and Parts, the robot's mention stripped from text parts in a group.
func TestDecodeAttachments(t *testing.T) {
	r := fuzzRobot()
	single := dingtalktest.Message{MsgID: "m", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}
	group := dingtalktest.Message{MsgID: "m", Group: true, InAtList: true, ConversationID: "cid-g", StaffID: "lisi"}
	long := strings.Repeat("报", 100) + ".pdf" // 304 bytes; 85 runes are 255
	cases := []struct {
		name      string
		body      []byte
		msgType   string
		text      string
		parts     []channels.Part
		mentioned bool
	}{
		{"Picture", single.Picture("c1"), channels.TypeMedia, "", []channels.Part{media(channels.MediaImage, "c1", "")}, false},
		{"RichTextInGroup", group.RichText(
			dingtalktest.RichItem{Text: "@HR助手 "}, dingtalktest.RichItem{Text: "登录时报"}, dingtalktest.RichItem{Text: "这个错"},
			dingtalktest.RichItem{DownloadCode: "c2"}, dingtalktest.RichItem{Text: "怎么办？"}, dingtalktest.RichItem{DownloadCode: "c3"}),
			channels.TypeMedia, "登录时报这个错\n怎么办？",
			[]channels.Part{text("登录时报这个错"), media(channels.MediaImage, "c2", ""), text("怎么办？"), media(channels.MediaImage, "c3", "")}, true},
		// Only the mention before the picture: no empty text part.
		{"RichTextMentionOnly", group.RichText(dingtalktest.RichItem{Text: "@HR助手"}, dingtalktest.RichItem{DownloadCode: "c4"}),
			channels.TypeMedia, "", []channels.Part{media(channels.MediaImage, "c4", "")}, true},
		{"RichTextWithoutPicture", group.RichText(dingtalktest.RichItem{Text: "@HR助手 请假"}, dingtalktest.RichItem{Text: "流程"}),
			channels.TypeText, "请假流程", nil, true},
		{"File", single.File("c5", "报销单 2026.pdf"), channels.TypeMedia, "", []channels.Part{media(channels.MediaFile, "c5", "报销单 2026.pdf")}, false},
		{"FileNameIsNoPath", single.File("c6", `..\..\etc/passwd`), channels.TypeMedia, "", []channels.Part{media(channels.MediaFile, "c6", "passwd")}, false},
		{"FileNameBounded", single.File("c7", long), channels.TypeMedia, "", []channels.Part{media(channels.MediaFile, "c7", strings.Repeat("报", 85))}, false},
		{"AudioRecognised", single.Audio("c8", "帮我查一下工资条", 3000), channels.TypeText, "帮我查一下工资条", nil, false},
		{"AudioRecognisedInGroup", group.Audio("c8", "@HR助手 帮我请假", 3000), channels.TypeText, "帮我请假", nil, true},
		{"AudioUnrecognised", single.Audio("c9", "", 3000), channels.TypeMedia, "", []channels.Part{media(channels.MediaVoice, "c9", "")}, false},
		{"Video", single.Video("c10", 8000), channels.TypeMedia, "", []channels.Part{media(channels.MediaVideo, "c10", "")}, false},
		// Content Hermes cannot read keeps its msgtype: answered as
		// unsupported rather than as an empty question.
		{"PictureWithoutCode", single.Picture(""), "picture", "", nil, false},
		{"FileWithoutCode", single.File("", "a.pdf"), "file", "", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, ok, err := r.decodeMessage(c.body)
			if err != nil || !ok {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if in.MsgType != c.msgType || in.Text != c.text || in.Mentioned != c.mentioned {
				t.Errorf("msgtype %q text %q mentioned %v, want %q %q %v", in.MsgType, in.Text, in.Mentioned, c.msgType, c.text, c.mentioned)
			}
			if got, want := partsJSON(in.Parts), partsJSON(c.parts); got != want {
				t.Errorf("parts\n got %s\nwant %s", got, want)
			}
			if in.Quote != nil {
				t.Errorf("quote %+v, want none", in.Quote)
			}
		})
	}
}

// TestAttachmentsArriveByCallbackAndStream: the same messages reach the
// sink as parts over an HTTP callback and over a Stream connection.
func TestAttachmentsArriveByCallbackAndStream(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	c := newClock()
	ctx := withTimeout(t, 10*time.Second)
	m := dingtalktest.Message{MsgID: "msg-pic", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}
	bodies := [][]byte{
		m.Picture("c1"),
		func() []byte { m := m; m.MsgID = "msg-file"; return m.File("c2", "年假.xlsx") }(),
	}
	want := [][]channels.Part{{media(channels.MediaImage, "c1", "")}, {media(channels.MediaFile, "c2", "年假.xlsx")}}
	check := func(t *testing.T, acc []channels.Inbound) {
		t.Helper()
		if len(acc) != len(want) {
			t.Fatalf("accepted %d, want %d", len(acc), len(want))
		}
		for i, in := range acc {
			if in.MsgType != channels.TypeMedia || partsJSON(in.Parts) != partsJSON(want[i]) {
				t.Errorf("%s: %s %s, want %s", in.MsgID, in.MsgType, partsJSON(in.Parts), partsJSON(want[i]))
			}
		}
	}

	t.Run("Callback", func(t *testing.T) {
		sink := chantest.NewSink()
		u := callbackServer(t, testRobot(t, fake, c, nil, nil), sink)
		for _, b := range bodies {
			c.Add(time.Millisecond) // a signature is good for one message
			if got := do(t, dingtalktest.CallbackRequest(u, testAppSecret, c.Now(), b)); got != http.StatusOK {
				t.Fatalf("status %d", got)
			}
		}
		check(t, sink.Accepted())
	})
	t.Run("Stream", func(t *testing.T) {
		sink := chantest.NewSink()
		runStreamRobot(t, streamRobot(t, fake, c, time.Minute), sink)
		waitConnections(t, ctx, fake, 1, 1)
		for _, b := range bodies {
			id, err := fake.PushCallback(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if err := fake.WaitStream(ctx, func(acks []dingtalktest.Ack, _, _ int) bool { _, ok := ackOf(acks, id); return ok }); err != nil {
				t.Fatal(err)
			}
		}
		check(t, sink.Accepted())
	})
}

// TestFetchMedia: a downloadCode becomes its bytes and name; each way
// DingTalk refuses is classified, and the download host never sees the
// access token.
func TestFetchMedia(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	r := testRobot(t, fake, newClock(), nil, nil)
	ch := &Channel{robots: map[string]*robot{"hr-bot": r}}
	ctx := withTimeout(t, 10*time.Second)
	// refOf is the ref the decoder makes of body's one attachment.
	refOf := func(t *testing.T, body []byte) channels.MediaRef {
		t.Helper()
		in, _, err := r.decodeMessage(body)
		if err != nil || len(in.Parts) != 1 || in.Parts[0].Media == nil {
			t.Fatalf("%s: parts %+v, %v", body, in.Parts, err)
		}
		return *in.Parts[0].Media
	}
	m := dingtalktest.Message{MsgID: "m", ConversationID: "cid", StaffID: "zhangsan", CorpID: testCorpID}
	shot := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 4096)...)

	t.Run("OK", func(t *testing.T) {
		att, err := ch.FetchMedia(ctx, "hr-bot", refOf(t, m.Picture(fake.AddFile(shot, "报错 截图.png"))), 1<<20)
		if err != nil || !bytes.Equal(att.Data, shot) || att.Name != "报错 截图.png" {
			t.Fatalf("got %d bytes named %q, %v; want the picture and its Content-Disposition name", len(att.Data), att.Name, err)
		}
		// No Content-Disposition: the name the message gave.
		att, err = ch.FetchMedia(ctx, "hr-bot", refOf(t, m.File(fake.AddFile([]byte("a,b\n"), ""), "年假.csv")), 1<<20)
		if err != nil || string(att.Data) != "a,b\n" || att.Name != "年假.csv" {
			t.Fatalf("got %q named %q, %v", att.Data, att.Name, err)
		}
	})

	t.Run("RefreshesExpiredToken", func(t *testing.T) {
		ref := refOf(t, m.Picture(fake.AddFile(shot, "")))
		before := fake.TokenRequests()
		fake.ExpireTokens()
		if _, err := ch.FetchMedia(ctx, "hr-bot", ref, 1<<20); err != nil {
			t.Fatal(err)
		}
		if n := fake.TokenRequests() - before; n != 1 {
			t.Fatalf("%d token requests, want one refresh", n)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		expired := fake.AddFile(shot, "")
		fake.Expire(expired)
		notHTTP := fake.AddFile(shot, "")
		fake.SetDownloadURL(notHTTP, "file:///etc/passwd")
		gone := fake.AddFile(shot, "")
		fake.SetDownloadURL(gone, fake.URL()+"/files/gone?Signature=old") // the storage host answers 403
		refused, busy := fake.AddFile(shot, ""), fake.AddFile(shot, "")
		cases := []struct {
			name    string
			account string
			ref     channels.MediaRef
			limit   int64
			fail    func() // an injected answer of the exchange
			want    error  // nil: transient, no sentinel
		}{
			{"CodeExpired", "hr-bot", refOf(t, m.Picture(expired)), 1 << 20, nil, channels.ErrMediaExpired},
			{"URLExpired", "hr-bot", refOf(t, m.Picture(gone)), 1 << 20, nil, channels.ErrMediaExpired},
			{"NotHTTP", "hr-bot", refOf(t, m.Picture(notHTTP)), 1 << 20, nil, channels.ErrMediaRefused},
			{"TooLarge", "hr-bot", refOf(t, m.Picture(fake.AddFile(shot, ""))), 1024, nil, channels.ErrMediaTooLarge},
			{"NoPermission", "hr-bot", refOf(t, m.Picture(refused)), 1 << 20,
				func() { fake.Fail(messageFilesPath, 1, 403, "Forbidden.AccessDenied.AccessTokenPermissionDenied") }, channels.ErrMediaRefused},
			{"DingTalkBusy", "hr-bot", refOf(t, m.Picture(busy)), 1 << 20,
				func() { fake.Fail(messageFilesPath, 1, 503, "ServiceUnavailable") }, nil},
			{"UnknownAccount", "no-such-bot", refOf(t, m.Picture(busy)), 1 << 20, nil, channels.ErrMediaRefused},
			{"BadRef", "hr-bot", channels.MediaRef{Kind: channels.MediaImage, Ref: json.RawMessage(`{"url":"x"}`)}, 1 << 20, nil, channels.ErrMediaRefused},
		}
		sentinels := []error{channels.ErrMediaExpired, channels.ErrMediaTooLarge, channels.ErrMediaUndecryptable, channels.ErrMediaRefused, channels.ErrPermanent}
		for _, c := range cases {
			if c.fail != nil {
				c.fail()
			}
			_, err := ch.FetchMedia(ctx, c.account, c.ref, c.limit)
			if err == nil {
				t.Errorf("%s: no error", c.name)
				continue
			}
			for _, s := range sentinels {
				if is := errors.Is(err, s); is != (s == c.want) {
					t.Errorf("%s: err %v; errors.Is(%v) = %v", c.name, err, s, is)
				}
			}
			if strings.Contains(err.Error(), "Signature") {
				t.Errorf("%s: err %v quotes the download URL", c.name, err)
			}
		}
	})

	st := fake.FileStats()
	if st.Gets < 4 || st.TokenGets != 0 {
		t.Fatalf("file stats %+v: want downloads, none with the access token", st)
	}
}

// TestFetchMediaBoundsTime: a download URL that never answers costs the
// caller's deadline, and the error is transient.
func TestFetchMediaBoundsTime(t *testing.T) {
	fake := dingtalktest.NewServer(t, testAppKey, testAppSecret)
	r := testRobot(t, fake, newClock(), nil, nil)
	stuck := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-stuck:
		case <-req.Context().Done():
		case <-time.After(5 * time.Second): // a client that ignores its deadline gets an answer, and fails
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(stuck) }) // runs first: no handler outlives the test
	code := fake.AddFile([]byte("x"), "")
	fake.SetDownloadURL(code, hang.URL+"/file")
	ctx := withTimeout(t, 200*time.Millisecond)
	ref, _ := json.Marshal(fileRef{DownloadCode: code})
	_, err := r.fetchMedia(ctx, channels.MediaRef{Kind: channels.MediaFile, Ref: ref}, 1<<20)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, channels.ErrMediaExpired) || errors.Is(err, channels.ErrMediaRefused) {
		t.Fatalf("err %v, want the deadline, transient", err)
	}
}
