package dingtalktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Message is a robot message as DingTalk delivers it (HTTP callback body or
// Stream CALLBACK data).
type Message struct {
	MsgID            string
	Text             string
	Group            bool
	ConversationID   string
	StaffID, Nick    string
	CorpID           string
	InAtList         bool
	RobotCode        string
	SessionWebhook   string
	WebhookExpiresAt time.Time
}

// JSON is the message's wire form, a text message of m.Text.
func (m Message) JSON() []byte {
	body := m.envelope()
	body["msgtype"], body["text"] = "text", map[string]string{"content": m.Text}
	b, _ := json.Marshal(body)
	return b
}

// envelope is every field of the message but its msgtype and content.
func (m Message) envelope() map[string]any {
	convType := "1"
	if m.Group {
		convType = "2"
	}
	body := map[string]any{
		"msgId": m.MsgID, "conversationId": m.ConversationID, "conversationType": convType,
		"senderId": "$:LWCP_v1:$" + m.StaffID, "senderStaffId": m.StaffID, "senderNick": m.Nick,
		"senderCorpId": m.CorpID, "chatbotUserId": "$:LWCP_v1:$robot", "chatbotCorpId": m.CorpID,
		"isInAtList": m.InAtList, "robotCode": m.RobotCode, "isAdmin": false,
		"createAt": time.Now().UnixMilli(),
	}
	if m.InAtList {
		body["atUsers"] = []map[string]string{{"dingtalkId": "$:LWCP_v1:$robot"}}
	}
	if m.SessionWebhook != "" {
		body["sessionWebhook"] = m.SessionWebhook
		body["sessionWebhookExpiredTime"] = m.WebhookExpiresAt.UnixMilli()
	}
	return body
}

// Sign is DingTalk's robot signature over a millisecond timestamp.
func Sign(appSecret, timestamp string) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte(timestamp + "\n" + appSecret))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// CallbackRequest is the POST DingTalk makes to a robot's callback URL at
// ts, signed with appSecret.
func CallbackRequest(url, appSecret string, ts time.Time, body []byte) *http.Request {
	t := strconv.FormatInt(ts.UnixMilli(), 10)
	return SignedRequest(url, t, Sign(appSecret, t), body)
}

// SignedRequest is a callback POST with the given timestamp and sign
// headers and body: with the headers of a captured request, the replay an
// attacker would send (the sign does not cover the body).
func SignedRequest(url, timestamp, sign string, body []byte) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("timestamp", timestamp)
	req.Header.Set("sign", sign)
	return req
}

// The attachments of a message as DingTalk delivers them: msgtype and a
// content object (protocols.md, "Media in messages"). downloadCode is
// what AddFile returned.

// Picture is a picture message. DingTalk sends a pictureDownloadCode
// beside the downloadCode; only the downloadCode is exchanged for the
// bytes.
func (m Message) Picture(downloadCode string) []byte {
	return m.withContent("picture", map[string]any{"downloadCode": downloadCode, "pictureDownloadCode": "pic-" + downloadCode})
}

// RichItem is one item of a richText message: a text, or a picture when
// DownloadCode is set.
type RichItem struct {
	Text         string
	DownloadCode string
}

// RichText is a richText message of items, in order.
func (m Message) RichText(items ...RichItem) []byte {
	list := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if it.DownloadCode != "" {
			list = append(list, map[string]any{"type": "picture", "downloadCode": it.DownloadCode, "pictureDownloadCode": "pic-" + it.DownloadCode})
			continue
		}
		list = append(list, map[string]any{"text": it.Text})
	}
	return m.withContent("richText", map[string]any{"richText": list})
}

// File is a file message of fileName.
func (m Message) File(downloadCode, fileName string) []byte {
	return m.withContent("file", map[string]any{"downloadCode": downloadCode, "fileName": fileName,
		"spaceId": "20000001", "fileId": "fileid-" + downloadCode})
}

// Audio is a voice message of duration milliseconds; recognition is
// DingTalk's transcript of it ("" sends none, as when nothing was
// recognised).
func (m Message) Audio(downloadCode, recognition string, duration int) []byte {
	c := map[string]any{"downloadCode": downloadCode, "duration": duration}
	if recognition != "" {
		c["recognition"] = recognition
	}
	return m.withContent("audio", c)
}

// Video is a video message of duration milliseconds.
func (m Message) Video(downloadCode string, duration int) []byte {
	return m.withContent("video", map[string]any{"downloadCode": downloadCode, "duration": duration, "videoType": "mp4"})
}

func (m Message) withContent(msgtype string, content map[string]any) []byte {
	body := m.envelope()
	body["msgtype"], body["content"] = msgtype, content
	b, _ := json.Marshal(body)
	return b
}
