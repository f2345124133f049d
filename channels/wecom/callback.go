package wecom

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/url"
	"strings"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// VerifyURL answers WeCom's GET URL verification. q is the request query as
// net/url decodes it (msg_signature, timestamp, nonce, echostr). It returns
// the bare plaintext to write back (no quotes, no newline).
//
// Errors wrap wxbiz.ErrSignature (missing or wrong signature over echostr),
// wxbiz.ErrStale (timestamp outside the window) or wxbiz.ErrDecrypt.
func (a *App) VerifyURL(q url.Values) ([]byte, error) {
	plain, err := wxbiz.VerifyEcho(a.crypto, q, a.now(), a.window)
	if err != nil {
		return nil, fmt.Errorf("wecom: app %q: verify URL: %w", a.name, err)
	}
	return plain, nil
}

// envelope is the POST body WeCom sends to a self-built app's callback URL.
type envelope struct {
	ToUserName string `xml:"ToUserName"`
	Encrypt    string `xml:"Encrypt"`
	AgentID    string `xml:"AgentID"`
}

// ParseCallback verifies and decodes a POST message callback: msg_signature
// over <Encrypt>, the timestamp window, decryption with receiveid = corp id,
// then the message XML.
//
// The Inbound's Raw is a JSON object of the decrypted XML's fields, element
// name → text (nested elements become objects, repeated ones arrays), e.g.
// {"Content":"hi","CreateTime":"1348831860","FromUserName":"zhangsan",...}.
// Values stay strings as WeCom sent them.
//
// A click on a Hermes card's button (template_card_event) is an Inbound of
// MsgType channels.TypeClick with its Click (cardevent.go).
//
// Errors wrap wxbiz.ErrMalformed (body or message not WeCom's XML, or a message
// without the fields that identify it), wxbiz.ErrSignature, wxbiz.ErrStale,
// wxbiz.ErrDecrypt or channels.ErrCorp (an AgentID other than the app's).
func (a *App) ParseCallback(q url.Values, body []byte) (channels.Inbound, error) {
	fail := func(err error) (channels.Inbound, error) {
		return channels.Inbound{}, fmt.Errorf("wecom: app %q: callback: %w", a.name, err)
	}
	var env envelope
	if err := xml.Unmarshal(body, &env); err != nil {
		return fail(fmt.Errorf("%w: envelope: %v", wxbiz.ErrMalformed, err))
	}
	if env.Encrypt == "" {
		return fail(fmt.Errorf("%w: envelope has no Encrypt", wxbiz.ErrMalformed))
	}
	if err := wxbiz.CheckQuery(a.crypto, q, env.Encrypt, a.now(), a.window); err != nil {
		return fail(err)
	}
	plain, err := a.crypto.Decrypt(env.Encrypt)
	if err != nil {
		return fail(err)
	}
	in, err := a.decodeMessage(plain)
	if err != nil {
		return fail(err)
	}
	return in, nil
}

// msgDecoders fill the type-specific parts of an Inbound. Image, voice,
// video and file become attachments (app_files.go); types without an
// entry (location, link, ...) carry no text and are identified by MsgId,
// like text.
var msgDecoders = map[string]func(f xmlFields, in *channels.Inbound) error{
	channels.TypeText:  decodeText,
	channels.TypeEvent: decodeEvent,
	"image":            decodeAppMedia,
	"voice":            decodeAppMedia,
	"video":            decodeAppMedia,
	"file":             decodeAppMedia,
}

// decodeMessage turns a decrypted message into an Inbound.
func (a *App) decodeMessage(plain []byte) (channels.Inbound, error) {
	f, err := parseXMLFields(plain)
	if err != nil {
		return channels.Inbound{}, err
	}
	from, msgType := f.get("FromUserName"), f.get("MsgType")
	if from == "" || msgType == "" {
		return channels.Inbound{}, fmt.Errorf("%w: message lacks FromUserName or MsgType", wxbiz.ErrMalformed)
	}
	if agent := f.get("AgentID"); agent != "" && agent != a.agentID {
		// Signed with this app's keys, but naming another app: the corp id
		// (receiveid) was checked by the decryption, the app is checked here.
		return channels.Inbound{}, fmt.Errorf("%w: AgentID %q, want %q", channels.ErrCorp, agent, a.agentID)
	}
	raw, err := json.Marshal(f)
	if err != nil {
		return channels.Inbound{}, fmt.Errorf("%w: %v", wxbiz.ErrMalformed, err)
	}
	replyTo, err := json.Marshal(appReplyTo{ToUser: from})
	if err != nil {
		return channels.Inbound{}, fmt.Errorf("%w: %v", wxbiz.ErrMalformed, err)
	}
	in := channels.Inbound{
		Channel:  ChannelName,
		Account:  a.name,
		MsgType:  msgType,
		ChatID:   from,
		ChatType: channels.ChatSingle,
		// FromUserName comes from the decrypted, receiveid-checked message, so
		// it is the verified sender.
		Sender:  channels.Identity{UserID: from, CorpID: a.corpID},
		ReplyTo: replyTo,
		Raw:     raw,
	}
	decode, ok := msgDecoders[msgType]
	if !ok {
		decode = decodeByMsgID
	}
	if err := decode(f, &in); err != nil {
		return channels.Inbound{}, err
	}
	return in, nil
}

func decodeByMsgID(f xmlFields, in *channels.Inbound) error {
	in.MsgID = f.get("MsgId")
	if in.MsgID == "" {
		return fmt.Errorf("%w: %s message without MsgId", wxbiz.ErrMalformed, in.MsgType)
	}
	return nil
}

func decodeText(f xmlFields, in *channels.Inbound) error {
	if err := decodeByMsgID(f, in); err != nil {
		return err
	}
	in.Text = f.text("Content")
	return nil
}

// decodeEvent: events have no MsgId; WeCom's advice is to dedupe them by
// FromUserName + CreateTime. A click on a Hermes card becomes a click
// (cardevent.go).
func decodeEvent(f xmlFields, in *channels.Inbound) error {
	created := f.get("CreateTime")
	if created == "" {
		return fmt.Errorf("%w: event without CreateTime", wxbiz.ErrMalformed)
	}
	in.MsgID = "event:" + in.Sender.UserID + ":" + created
	if f.get("Event") == EventTemplateCard {
		return decodeCardEvent(f, in)
	}
	return nil
}

// xmlFields is a decoded XML element: child name → string (a leaf), xmlFields
// (an element with children) or []any (a repeated name).
type xmlFields map[string]any

// get returns a leaf's text trimmed, "" when absent or not a leaf; for ids
// and numbers, where surrounding white space is never meaningful.
func (f xmlFields) get(name string) string {
	return strings.TrimSpace(f.text(name))
}

// text returns a leaf's text as sent; for user content.
func (f xmlFields) text(name string) string {
	s, _ := f[name].(string)
	return s
}

// parseXMLFields decodes a WeCom message, <xml><Name>text</Name>...</xml>,
// generically so that Raw records every field, including ones this package
// does not know yet.
func parseXMLFields(data []byte) (xmlFields, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: message: %v", wxbiz.ErrMalformed, err)
		}
		if _, ok := tok.(xml.StartElement); ok {
			break
		}
	}
	v, err := readXMLElement(dec, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: message: %v", wxbiz.ErrMalformed, err)
	}
	f, ok := v.(xmlFields)
	if !ok {
		return nil, fmt.Errorf("%w: message root has no fields", wxbiz.ErrMalformed)
	}
	return f, nil
}

// maxXMLDepth bounds recursion; WeCom messages nest two or three levels.
const maxXMLDepth = 16

// readXMLElement reads the content of the element whose start tag was just
// consumed, up to and including its end tag.
func readXMLElement(dec *xml.Decoder, depth int) (any, error) {
	if depth > maxXMLDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxXMLDepth)
	}
	var text strings.Builder
	var children xmlFields
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			v, err := readXMLElement(dec, depth+1)
			if err != nil {
				return nil, err
			}
			if children == nil {
				children = xmlFields{}
			}
			name := t.Name.Local
			switch prev := children[name].(type) {
			case nil:
				children[name] = v
			case []any:
				children[name] = append(prev, v)
			default:
				children[name] = []any{prev, v}
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			if children != nil {
				return children, nil // white space between children is layout
			}
			return text.String(), nil
		}
	}
}
