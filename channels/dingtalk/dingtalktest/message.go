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

// JSON is the message's wire form.
func (m Message) JSON() []byte {
	convType := "1"
	if m.Group {
		convType = "2"
	}
	body := map[string]any{
		"msgId": m.MsgID, "msgtype": "text", "text": map[string]string{"content": m.Text},
		"conversationId": m.ConversationID, "conversationType": convType,
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
	b, _ := json.Marshal(body)
	return b
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
