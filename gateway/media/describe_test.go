package media_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sashabaranov/go-openai"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/channels/wecom/wecomtest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
)

// describeYAML points media.describe at a vision model server.
func describeYAML(url string) string {
	return fmt.Sprintf("media:\n  describe:\n    name: test-vl\n    base_url: %s\n    timeout: 5s\n", url)
}

// TestImageIsDescribedForATextOnlyModel: with model.vision off and
// media.describe set, each image of a mixed message goes to the vision
// model alone (its prompt and the image, nothing of the conversation), and
// the model gets the text with each description after its image's marker
// and no image part. The conversation keeps only the markers; the console
// records what each image became. A vision model that fails is answered
// with messages.media.describe_failed and no model call.
func TestImageIsDescribedForATextOnlyModel(t *testing.T) {
	t.Parallel()
	vision := openaitest.NewServer(t)
	var mu sync.Mutex
	var asked []openai.ChatCompletionRequest
	first, second := chantest.PNG(t, 48, 48), chantest.PNG(t, 24, 24)
	broken := append(bytes.Clone(first), "trailing"...) // a PNG with trailing bytes still has its header
	dataURL := func(b []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b) }
	descriptions := map[string]string{dataURL(first): "弹窗报错：VPN 连接失败，错误代码 809", dataURL(second): "网络设置页面，DNS 为空"}
	vision.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		last := req.Messages[len(req.Messages)-1].MultiContent
		if len(last) != 2 || last[1].ImageURL == nil {
			return openaitest.Reply{Status: http.StatusBadRequest, Content: "no image"}
		}
		if d, ok := descriptions[last[1].ImageURL.URL]; ok {
			return openaitest.Reply{Content: d}
		}
		return openaitest.Reply{Status: http.StatusServiceUnavailable, Content: "overloaded"}
	})
	r := gatewaytest.NewBotRigWith(t, "", describeYAML(vision.URL()))
	m := wecomtest.BotMessage{MsgID: "dsc-1", AIBotID: gatewaytest.WSBotID, ChatID: "zhangsan", ChatType: "single", UserID: "zhangsan"}
	answer := r.Ask(t, m.Mixed(wecomtest.MixedText("连不上 VPN"),
		wecomtest.MixedImageWithKey(r.Files.Add(first, fileKey, ""), wecomtest.BotFileKey(fileKey)),
		wecomtest.MixedImageWithKey(r.Files.Add(second, fileKey, ""), wecomtest.BotFileKey(fileKey)),
		wecomtest.MixedText("怎么办？")))
	if !strings.Contains(answer, "收到") {
		t.Fatalf("answer %q, want the model's", answer)
	}
	calls := r.Calls()
	want := "连不上 VPN\n[图片1]\n（图片内容，由图像识别模型描述：弹窗报错：VPN 连接失败，错误代码 809）\n" +
		"[图片2]\n（图片内容，由图像识别模型描述：网络设置页面，DNS 为空）\n怎么办？"
	if len(calls) != 1 || len(calls[0].MultiContent) != 0 || calls[0].Content != want {
		t.Fatalf("model got %+v, want one text message:\n%s", calls, want)
	}
	mu.Lock()
	if len(asked) != 2 {
		t.Fatalf("vision model asked %d times, want once per image", len(asked))
	}
	for _, req := range asked {
		if req.Model != "test-vl" || len(req.Messages) != 1 || req.Messages[0].MultiContent[0].Text != config.DefaultDescribePrompt {
			t.Fatalf("vision request %+v, want the prompt and the image alone", req)
		}
	}
	mu.Unlock()
	var stored string
	if err := r.H.Pool.QueryRow(r.Ctx, `SELECT content FROM messages WHERE role = 'user'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != "连不上 VPN\n[图片1]\n[图片2]\n怎么办？" {
		t.Errorf("history keeps %q, want the markers only", stored)
	}
	if n := r.H.Count(`SELECT count(*) FROM inbound_media WHERE became = '图片 48×48 → 图像识别模型 22 字'`); n != 1 {
		t.Errorf("what the first image became is not recorded")
	}

	// The vision model fails: a clear answer, the model is not called.
	m.MsgID = "dsc-2"
	got := r.Ask(t, m.ImageWithKey(r.Files.Add(broken, fileKey, ""), wecomtest.BotFileKey(fileKey)))
	if !strings.Contains(got, config.DefaultMediaMessages.DescribeFailed) || len(r.Calls()) != 1 {
		t.Fatalf("answer %q after %d model calls, want describe_failed and no new call", got, len(r.Calls()))
	}
}

// TestVoiceIsTranscribedWhenThePlatformSendsNone: a self-built app's voice
// message (AMR, no transcript) is fetched by media/get and sent to
// media.transcribe (here the model's own endpoint: base_url is inherited)
// as a multipart upload named voice.amr with the language; its words reach
// the model as the message and stay in the conversation. A failing
// transcription is answered with messages.media.transcribe_failed.
func TestVoiceIsTranscribedWhenThePlatformSendsNone(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	amr := append([]byte("#!AMR\n"), bytes.Repeat([]byte{0x3c, 0x48}, 200)...)
	h.Model.SetTranscriber(func(tr openaitest.Transcription) openaitest.Reply {
		if bytes.Equal(tr.Audio, amr) {
			return openaitest.Reply{Content: "帮我查一下年假还有几天"}
		}
		return openaitest.Reply{Status: http.StatusInternalServerError, Content: "decoder failed"}
	})
	var mu sync.Mutex
	var seen []string
	h.Model.SetHandler(func(req openai.ChatCompletionRequest) openaitest.Reply {
		mu.Lock()
		seen = append(seen, req.Messages[len(req.Messages)-1].Content)
		mu.Unlock()
		return openaitest.Reply{Content: "你还有 5 天年假"}
	})
	h.StartExtra("media:\n  transcribe:\n    name: whisper-1\n", gateway.Deps{})
	ctx := gatewaytest.WithTimeout(t, 30*time.Second)
	for i, audio := range [][]byte{amr, []byte("#!AMR\nbroken")} {
		id := h.WeComAPI.AddMedia(audio, "")
		xml := wecomtest.VoiceMessageXML(gatewaytest.CorpID, "zhangsan", id, fmt.Sprint(7100+i), gatewaytest.AgentID, time.Now().Unix())
		u, body := h.CallbackRequest(xml, time.Now())
		if status, _ := gatewaytest.Post(t, u, body); status != 200 {
			t.Fatalf("voice callback answered %d", status)
		}
		if _, err := h.WeComAPI.WaitMessages(ctx, i+1); err != nil {
			t.Fatal(err)
		}
	}
	msgs := h.WeComAPI.Messages()
	if msgs[0].Content != "你还有 5 天年假" || msgs[1].Content != config.DefaultMediaMessages.TranscribeFailed {
		t.Fatalf("replies %q, %q; want the model's, then transcribe_failed", msgs[0].Content, msgs[1].Content)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != "帮我查一下年假还有几天" {
		t.Fatalf("model saw %q, want the transcript once", seen)
	}
	mu.Unlock()
	trs := h.Model.Transcriptions()
	if len(trs) != 2 || trs[0].Model != "whisper-1" || trs[0].Language != "zh" || trs[0].FileName != "voice.amr" || trs[0].ResponseFormat != "json" {
		t.Fatalf("transcription requests %+v", trs)
	}
	h.WaitIdle(ctx)
	if n := h.Count(`SELECT count(*) FROM messages WHERE role = 'user' AND content = '帮我查一下年假还有几天'`); n != 1 {
		t.Errorf("the conversation does not keep the transcript")
	}
	if n := h.Count(`SELECT count(*) FROM inbound_media WHERE became = '语音 → 转写 11 字'`); n != 1 {
		t.Errorf("what the voice became is not recorded")
	}
}
