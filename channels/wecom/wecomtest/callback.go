package wecomtest

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/url"
	"strings"

	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// EncryptedCallback builds a message callback exactly as WeCom POSTs it to a
// self-built app: the query (msg_signature, timestamp, nonce) and the body
// <xml><ToUserName/><Encrypt/><AgentID/></xml>. ToUserName and AgentID are
// copied from plainXML. It panics only if crypto/rand fails.
func EncryptedCallback(c *wxbiz.Crypto, plainXML string, timestamp, nonce string) (url.Values, []byte) {
	q, enc := sealed(c, []byte(plainXML), timestamp, nonce)
	var head struct {
		ToUserName string `xml:"ToUserName"`
		AgentID    string `xml:"AgentID"`
	}
	_ = xml.Unmarshal([]byte(plainXML), &head) // best effort: the envelope fields are informational
	body := "<xml><ToUserName>" + cdata(head.ToUserName) + "</ToUserName><Encrypt>" + cdata(enc) +
		"</Encrypt><AgentID>" + cdata(head.AgentID) + "</AgentID></xml>"
	return q, []byte(body)
}

// VerifyURLQuery builds the GET URL-verification query WeCom sends when an
// admin saves the callback URL: echostr is plain encrypted with c.
func VerifyURLQuery(c *wxbiz.Crypto, plain, timestamp, nonce string) url.Values {
	q, enc := sealed(c, []byte(plain), timestamp, nonce)
	q.Set("echostr", enc)
	return q
}

// sealed encrypts plain with c and returns it with the signed query WeCom
// sends along (msg_signature, timestamp, nonce). It panics only if
// crypto/rand fails.
func sealed(c *wxbiz.Crypto, plain []byte, timestamp, nonce string) (url.Values, string) {
	enc, err := c.Encrypt(plain, nil)
	if err != nil {
		panic(fmt.Sprintf("wecomtest: encrypt: %v", err))
	}
	q := url.Values{}
	q.Set("msg_signature", c.Signature(timestamp, nonce, enc))
	q.Set("timestamp", timestamp)
	q.Set("nonce", nonce)
	return q, enc
}

// TextMessageXML is a decrypted text message as WeCom documents it; toUser
// is the corp id.
func TextMessageXML(toUser, fromUser, content, msgID string, agentID string, createTime int64) string {
	return fmt.Sprintf("<xml><ToUserName>%s</ToUserName><FromUserName>%s</FromUserName>"+
		"<CreateTime>%d</CreateTime><MsgType><![CDATA[text]]></MsgType><Content>%s</Content>"+
		"<MsgId>%s</MsgId><AgentID>%s</AgentID></xml>",
		cdata(toUser), cdata(fromUser), createTime, cdata(content), escape(msgID), escape(agentID))
}

// ImageMessageXML is a decrypted image message.
func ImageMessageXML(toUser, fromUser, picURL, mediaID, msgID string, agentID string, createTime int64) string {
	return fmt.Sprintf("<xml><ToUserName>%s</ToUserName><FromUserName>%s</FromUserName>"+
		"<CreateTime>%d</CreateTime><MsgType><![CDATA[image]]></MsgType><PicUrl>%s</PicUrl>"+
		"<MediaId>%s</MediaId><MsgId>%s</MsgId><AgentID>%s</AgentID></xml>",
		cdata(toUser), cdata(fromUser), createTime, cdata(picURL), cdata(mediaID), escape(msgID), escape(agentID))
}

// VoiceMessageXML is a decrypted voice message: WeCom keeps the AMR
// recording as temporary media and sends no transcript to a self-built app.
func VoiceMessageXML(toUser, fromUser, mediaID, msgID string, agentID string, createTime int64) string {
	return fmt.Sprintf("<xml><ToUserName>%s</ToUserName><FromUserName>%s</FromUserName>"+
		"<CreateTime>%d</CreateTime><MsgType><![CDATA[voice]]></MsgType><MediaId>%s</MediaId>"+
		"<Format><![CDATA[amr]]></Format><MsgId>%s</MsgId><AgentID>%s</AgentID></xml>",
		cdata(toUser), cdata(fromUser), createTime, cdata(mediaID), escape(msgID), escape(agentID))
}

// LocationMessageXML is a decrypted location message (a type Hermes does
// not read).
func LocationMessageXML(toUser, fromUser, msgID string, agentID string, createTime int64) string {
	return fmt.Sprintf("<xml><ToUserName>%s</ToUserName><FromUserName>%s</FromUserName>"+
		"<CreateTime>%d</CreateTime><MsgType><![CDATA[location]]></MsgType><Location_X>31.2</Location_X>"+
		"<Location_Y>121.5</Location_Y><Scale>15</Scale><Label><![CDATA[上海]]></Label><MsgId>%s</MsgId><AgentID>%s</AgentID></xml>",
		cdata(toUser), cdata(fromUser), createTime, escape(msgID), escape(agentID))
}

// EventXML is a decrypted event (enter_agent, click, ...); events carry no
// MsgId.
func EventXML(toUser, fromUser, event, eventKey string, agentID string, createTime int64) string {
	return fmt.Sprintf("<xml><ToUserName>%s</ToUserName><FromUserName>%s</FromUserName>"+
		"<CreateTime>%d</CreateTime><MsgType><![CDATA[event]]></MsgType><Event>%s</Event>"+
		"<EventKey>%s</EventKey><AgentID>%s</AgentID></xml>",
		cdata(toUser), cdata(fromUser), createTime, cdata(event), cdata(eventKey), escape(agentID))
}

// escape writes s as XML character data (ids are plain text, not CDATA, in
// WeCom's messages).
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// cdata wraps s in CDATA as WeCom does, splitting any "]]>" inside it.
func cdata(s string) string {
	return "<![CDATA[" + strings.ReplaceAll(s, "]]>", "]]]]><![CDATA[>") + "]]>"
}

// AppReplyTo is the ReplyTo a self-built app gives a message from user.
func AppReplyTo(user string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"to_user": user})
	return b
}
