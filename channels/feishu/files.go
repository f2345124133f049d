package feishu

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// What employees send a bot besides text, as 接收消息内容结构 documents it:
// image {"image_key"}, file {"file_key","file_name"}, audio {"file_key",
// "duration"}, media (a video) {"file_key","image_key","file_name",
// "duration"}, and post (rich text), whose img elements carry an
// image_key. 获取消息中的资源文件 serves the bytes, GET
// /open-apis/im/v1/messages/:message_id/resources/:file_key?type=image|file
// with the tenant token (audio and video are type=file), for as long as
// the message exists, up to 100 MB. A reply names the message it quotes
// (parent_id) without its content: QuotedMessage reads it.

// Resource types of the message resources API.
const (
	resourceImage = "image"
	resourceFile  = "file"
)

// mediaRef is the channels.MediaRef.Ref of a Feishu attachment: the
// resources API wants the message and the key together.
type mediaRef struct {
	MessageID string `json:"message_id"`
	FileKey   string `json:"file_key"`
	Type      string `json:"type"` // resourceImage | resourceFile
}

// maxMediaParts bounds the attachments of one message (ours, not
// Feishu's): each is a download in the worker, and a post of a 1 MiB
// event could name thousands of images. Those past it are left out.
const maxMediaParts = 20

// fileContent is the content of an image, file, audio or media message.
type fileContent struct {
	ImageKey string `json:"image_key"`
	FileKey  string `json:"file_key"`
	FileName string `json:"file_name"`
}

// messageParts is a message's text and attachments in order. known is
// false for the types Hermes does not read (a sticker, a card, ...) and
// for content that is not what Feishu sends: the message keeps its own
// type, and the gateway answers it as unsupported.
func messageParts(messageID, msgType, content string) (parts []channels.Part, known bool) {
	decode, ok := partDecoders[msgType]
	if !ok {
		return nil, false
	}
	return decode(messageID, content)
}

// partDecoders decode the content of each message_type Hermes reads.
var partDecoders = map[string]func(messageID, content string) ([]channels.Part, bool){
	"text":  textParts,
	"post":  postParts,
	"image": fileParts(channels.MediaImage),
	"file":  fileParts(channels.MediaFile),
	"audio": fileParts(channels.MediaVoice),
	"media": fileParts(channels.MediaVideo),
}

func textParts(_, content string) ([]channels.Part, bool) {
	var c struct {
		Text string `json:"text"`
	}
	if json.Unmarshal([]byte(content), &c) != nil {
		return nil, false
	}
	return []channels.Part{{Text: c.Text}}, true
}

// fileParts decodes a message of one attachment of kind: an image by its
// image_key, anything else by its file_key (type=file).
func fileParts(kind string) func(messageID, content string) ([]channels.Part, bool) {
	return func(messageID, content string) ([]channels.Part, bool) {
		var c fileContent
		if json.Unmarshal([]byte(content), &c) != nil {
			return nil, false
		}
		key, typ := c.FileKey, resourceFile
		if kind == channels.MediaImage {
			key, typ = c.ImageKey, resourceImage
		}
		if key == "" {
			return nil, false
		}
		ref := newMediaRef(kind, messageID, key, typ)
		ref.Name = channels.CleanFileName(c.FileName)
		return []channels.Part{{Media: ref}}, true
	}
}

func newMediaRef(kind, messageID, key, typ string) *channels.MediaRef {
	ref, _ := json.Marshal(mediaRef{MessageID: messageID, FileKey: key, Type: typ}) // strings only: it always marshals
	return &channels.MediaRef{Kind: kind, Ref: ref}
}

// postBody is one locale of a post: received events carry it bare
// ({"title","content"}); a post as sent is wrapped by locale
// ({"zh_cn": {...}}), and both are read.
type postBody struct {
	Title   string          `json:"title"`
	Content [][]postElement `json:"content"`
}

type postElement struct {
	Tag      string `json:"tag"`
	Text     string `json:"text"`
	Href     string `json:"href"`
	UserID   string `json:"user_id"` // an at's mention key ("@_user_1"), like text's
	ImageKey string `json:"image_key"`
	FileKey  string `json:"file_key"`
}

// postLocales are the locales of a wrapped post in the order they are
// preferred; any other comes after them, by name.
var postLocales = []string{"zh_cn", "en_us", "ja_jp"}

// decodePost reads a post bare or wrapped by locale.
func decodePost(content string) (postBody, bool) {
	var keys map[string]json.RawMessage
	if json.Unmarshal([]byte(content), &keys) != nil {
		return postBody{}, false
	}
	_, title := keys["title"]
	_, body := keys["content"]
	if !title && !body {
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		slices.Sort(names)
		names = append(slices.Clone(postLocales), names...)
		for _, k := range names {
			var p postBody
			if raw, ok := keys[k]; ok && json.Unmarshal(raw, &p) == nil && (p.Title != "" || len(p.Content) > 0) {
				return p, true
			}
		}
	}
	var p postBody
	if json.Unmarshal([]byte(content), &p) != nil {
		return postBody{}, false
	}
	return p, true
}

// postParts are a post's text and attachments in order: the title, then
// each paragraph's text, link and mention elements, one line per
// paragraph, split where an image or a video stands. A post without
// either is one text, as it always was.
func postParts(messageID, content string) ([]channels.Part, bool) {
	p, ok := decodePost(content)
	if !ok {
		return nil, false
	}
	var parts []channels.Part
	var lines []string
	flush := func() {
		if len(lines) > 0 {
			parts = append(parts, channels.Part{Text: strings.Join(lines, "\n")})
			lines = nil
		}
	}
	if p.Title != "" {
		lines = append(lines, p.Title)
	}
	media := 0
	for _, para := range p.Content {
		var b strings.Builder
		split := false // an attachment ended the paragraph's text so far
		for _, el := range para {
			ref := el.media(messageID)
			if ref == nil {
				el.writeText(&b)
				continue
			}
			if media == maxMediaParts {
				continue
			}
			media++
			if b.Len() > 0 {
				lines = append(lines, b.String())
				b.Reset()
			}
			flush()
			parts = append(parts, channels.Part{Media: ref})
			split = true
		}
		if !split || b.Len() > 0 {
			lines = append(lines, b.String())
		}
	}
	flush()
	return parts, true
}

// media is the attachment an element stands for, nil for text.
func (el postElement) media(messageID string) *channels.MediaRef {
	switch {
	case el.Tag == "img" && el.ImageKey != "":
		return newMediaRef(channels.MediaImage, messageID, el.ImageKey, resourceImage)
	case el.Tag == "media" && el.FileKey != "":
		return newMediaRef(channels.MediaVideo, messageID, el.FileKey, resourceFile)
	}
	return nil
}

// writeText writes a text element's text; a link shows its address when
// the text does not.
func (el postElement) writeText(b *strings.Builder) {
	switch el.Tag {
	case "text", "md", "code_block":
		b.WriteString(el.Text)
	case "a":
		b.WriteString(el.Text)
		if el.Href != "" && el.Href != el.Text {
			b.WriteString(" (" + el.Href + ")")
		}
	case "at":
		b.WriteString(el.UserID) // resolved like a text message's keys
	}
}

// setParts makes in a media message of parts when one of them is an
// attachment (its blank texts left out), a text message otherwise; Text
// is their text, joined, either way.
func setParts(in *channels.Inbound, parts []channels.Part) {
	media := slices.ContainsFunc(parts, func(p channels.Part) bool { return p.Media != nil })
	if media {
		parts = slices.DeleteFunc(parts, func(p channels.Part) bool {
			return p.Media == nil && strings.TrimSpace(p.Text) == ""
		})
	}
	var text []string
	for _, p := range parts {
		if p.Media == nil {
			text = append(text, p.Text)
		}
	}
	in.Text = strings.Join(text, "\n")
	if media {
		in.MsgType, in.Parts = channels.TypeMedia, parts
	} else {
		in.MsgType, in.Parts = channels.TypeText, nil
	}
}

var _ channels.MediaFetcher = (*Channel)(nil)

// FetchMedia fetches an attachment of a message the app named account
// received (channels.MediaFetcher). Errors wrap ErrMediaExpired (the
// message was deleted or no longer holds the file), ErrMediaRefused (an
// unknown account or reference; the bot is not in the chat, lacks the
// scope, or the chat is confidential), ErrMediaTooLarge, or neither:
// Feishu could not be reached, worth another try.
func (c *Channel) FetchMedia(ctx context.Context, account string, ref channels.MediaRef, limit int64) (channels.Attachment, error) {
	a, ok := c.apps[account]
	if !ok {
		return channels.Attachment{}, fmt.Errorf("feishu: %w: unknown account %q", channels.ErrMediaRefused, account)
	}
	return a.fetchMedia(ctx, ref, limit)
}

// mediaTimeout bounds one download from the resources API.
const mediaTimeout = 60 * time.Second

// opResource names the resources API in errors.
const opResource = "im/v1/messages/resources"

// fetchMedia downloads one attachment, reading at most limit bytes. When
// Feishu says the token is invalid, the token is dropped from the shared
// cache and the download tried once more (as api.call does).
func (a *App) fetchMedia(ctx context.Context, ref channels.MediaRef, limit int64) (channels.Attachment, error) {
	var r mediaRef
	if err := json.Unmarshal(ref.Ref, &r); err != nil || r.MessageID == "" || r.FileKey == "" ||
		(r.Type != resourceImage && r.Type != resourceFile) {
		return channels.Attachment{}, fmt.Errorf("feishu: app %q: %w: bad reference %.200s", a.cfg.Name, channels.ErrMediaRefused, ref.Ref)
	}
	ctx, cancel := context.WithTimeout(ctx, mediaTimeout)
	defer cancel()
	path := "/open-apis/im/v1/messages/" + pathEscape(r.MessageID) + "/resources/" + pathEscape(r.FileKey)
	for attempt := 0; ; attempt++ {
		tok, err := a.api.token(ctx)
		if err != nil {
			return channels.Attachment{}, fmt.Errorf("feishu: app %q: media: %w", a.cfg.Name, err)
		}
		att, err := a.download(ctx, path, r.Type, tok, limit)
		if e := apiErrorOf(err); e != nil && lookupCode(e.Code).action == actRefreshToken && attempt == 0 {
			if err := a.api.tokens.Invalidate(ctx, a.api.tokenKey(), tok); err != nil {
				return channels.Attachment{}, fmt.Errorf("feishu: app %q: media: drop stale token: %w", a.cfg.Name, err)
			}
			continue
		}
		if err != nil {
			a.alert(err)
			return channels.Attachment{}, fmt.Errorf("feishu: app %q: media %s of %s: %w", a.cfg.Name, r.FileKey, r.MessageID, err)
		}
		if att.Name == "" {
			att.Name = ref.Name
		}
		return att, nil
	}
}

// download GETs one resource with token. An answer that is not the file
// (another status, or a JSON error on a 200, which Feishu sends too) is
// classified by mediaRefusal.
func (a *App) download(ctx context.Context, path, typ, token string, limit int64) (channels.Attachment, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.api.base+path+"?"+url.Values{"type": {typ}}.Encode(), nil)
	if err != nil {
		return channels.Attachment{}, fmt.Errorf("%w: %v", channels.ErrMediaRefused, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	// Not a.api.client: its timeout (httpTimeout) covers the body, and a
	// file may take up to mediaTimeout, which ctx bounds.
	client := *a.api.client
	client.Timeout = 0
	resp, err := client.Do(req)
	if err != nil {
		return channels.Attachment{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		return channels.Attachment{}, mediaRefusal(resp.StatusCode, body)
	}
	if resp.ContentLength > limit {
		return channels.Attachment{}, fmt.Errorf("%w: %d bytes, over %d", channels.ErrMediaTooLarge, resp.ContentLength, limit)
	}
	data, err := channels.ReadLimited(resp.Body, limit, resp.ContentLength)
	if err != nil {
		return channels.Attachment{}, err
	}
	if isJSON(resp.Header.Get("Content-Type")) {
		// A file of JSON is served as JSON too: only Feishu's error
		// envelope, a non-zero code, is an error.
		if err := mediaRefusal(resp.StatusCode, data); apiErrorOf(err) != nil {
			return channels.Attachment{}, err
		}
	}
	return channels.Attachment{Data: data, Name: channels.DispositionName(resp.Header.Get("Content-Disposition"))}, nil
}

// mediaCodes are the codes of 获取消息中的资源文件 (and the general ones it
// answers with) that say the file cannot be had; other codes are
// transient (234019 "scope CheckAppTenant fail" asks for a retry).
var mediaCodes = map[int]error{
	230110:   channels.ErrMediaExpired,  // the message was deleted
	234003:   channels.ErrMediaExpired,  // the file is not (or no longer) in the message
	234001:   channels.ErrMediaRefused,  // invalid request: the same request fails again
	230002:   channels.ErrMediaRefused,  // the bot is not in the chat
	234004:   channels.ErrMediaRefused,  // the app is not in the message's chat
	234009:   channels.ErrMediaRefused,  // lack of permissions (an external chat)
	234038:   channels.ErrMediaRefused,  // restricted mode: a confidential message or chat
	234040:   channels.ErrMediaRefused,  // the message is invisible to the bot (history hidden)
	234041:   channels.ErrMediaRefused,  // the tenant's master key was deleted
	234043:   channels.ErrMediaRefused,  // unsupported message type (merge forward, card)
	99991672: channels.ErrMediaRefused,  // the app lacks the scope im:message
	234037:   channels.ErrMediaTooLarge, // over Feishu's 100 MB download limit
}

// mediaStatuses class an answer without a code by its HTTP status.
var mediaStatuses = map[int]error{
	http.StatusNotFound:     channels.ErrMediaExpired,
	http.StatusGone:         channels.ErrMediaExpired,
	http.StatusUnauthorized: channels.ErrMediaRefused,
	http.StatusForbidden:    channels.ErrMediaRefused,
}

// mediaRefusal is the error of an answer that is not a file: it wraps
// *APIError when body is Feishu's {"code","msg"} with a non-zero code,
// and the sentinel of its code (or else of its status); 5xx and unknown
// codes are transient.
func mediaRefusal(status int, body []byte) error {
	var env struct {
		Code *int   `json:"code"`
		Msg  string `json:"msg"`
	}
	if json.Unmarshal(body, &env) == nil && env.Code != nil && *env.Code != 0 {
		e := &APIError{Op: opResource, Status: status, Code: *env.Code, Msg: env.Msg}
		if sentinel, ok := mediaCodes[e.Code]; ok {
			return fmt.Errorf("%w: %w", sentinel, e)
		}
		if sentinel, ok := mediaStatuses[status]; ok && lookupCode(e.Code).action != actRefreshToken {
			return fmt.Errorf("%w: %w", sentinel, e)
		}
		return e
	}
	if sentinel, ok := mediaStatuses[status]; ok {
		return fmt.Errorf("%w: %s: HTTP %d", sentinel, opResource, status)
	}
	return fmt.Errorf("%s: HTTP %d", opResource, status)
}

// isJSON reports whether a Content-Type is JSON's.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// quoteTimeout bounds reading a quoted message: it is context for the
// answer, not worth holding the answer long.
const quoteTimeout = 5 * time.Second

// maxQuoteBytes bounds the quoted text the model sees.
const maxQuoteBytes = 4 << 10

// codeMessageDeleted: 获取指定消息的内容 cannot read a deleted message.
const codeMessageDeleted = 230110

// quotePlaceholders stand for a quoted message's attachments: their
// bytes are not fetched (the user quoted them to ask about the
// conversation, not to have them read again).
var quotePlaceholders = map[string]string{
	channels.MediaImage: "[图片]",
	channels.MediaFile:  "[文件]",
	channels.MediaVoice: "[语音]",
	channels.MediaVideo: "[视频]",
}

// quotedItem is one message as 获取指定消息的内容 answers it.
type quotedItem struct {
	MessageID string `json:"message_id"`
	ChatID    string `json:"chat_id"`
	MsgType   string `json:"msg_type"`
	Deleted   bool   `json:"deleted"`
	Sender    struct {
		ID         string `json:"id"` // of the user_id_type asked for; an app's app_id
		SenderType string `json:"sender_type"`
	} `json:"sender"`
	Body struct {
		Content string `json:"content"`
	} `json:"body"`
	Mentions []struct {
		Key  string `json:"key"`
		Name string `json:"name"`
	} `json:"mentions"`
}

var _ channels.QuoteResolver = (*Channel)(nil)

// ResolveQuote returns the message in quotes (channels.QuoteResolver):
// the parent_id decodeEvent kept in its ReplyTo, read with QuotedMessage;
// nil for a message that is no reply. Errors: see QuotedMessage.
func (c *Channel) ResolveQuote(ctx context.Context, in channels.Inbound) (*channels.Quote, error) {
	var rt replyTo
	if json.Unmarshal(in.ReplyTo, &rt) != nil || rt.ParentID == "" {
		return nil, nil
	}
	return c.QuotedMessage(ctx, in.Account, rt.ParentID, in.ChatID)
}

// QuotedMessage reads the message parentID (a reply's parent_id) with
// 获取指定消息的内容, GET /open-apis/im/v1/messages/:message_id, and returns
// it as a quote: its text (a post flattened, attachments as "[图片]" or
// "[文件] name", mention keys as "@name") and, when a user sent it, their
// id of the app's id_type. It is nil when the message is of another chat
// than chatID (the asker may see quotes of their own chat only), deleted,
// or has no text (a card, a sticker).
//
// Errors wrap channels.ErrUnknownAccount, or *APIError when Feishu
// answered (230002: the bot is no longer in the chat).
func (c *Channel) QuotedMessage(ctx context.Context, account, parentID, chatID string) (*channels.Quote, error) {
	a, ok := c.apps[account]
	if !ok {
		return nil, fmt.Errorf("feishu: %w %q", channels.ErrUnknownAccount, account)
	}
	if parentID == "" || chatID == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, quoteTimeout)
	defer cancel()
	var out struct {
		Data struct {
			Items []quotedItem `json:"items"`
		} `json:"data"`
	}
	err := a.api.call(ctx, "im/v1/messages/get", http.MethodGet, "/open-apis/im/v1/messages/"+pathEscape(parentID),
		url.Values{"user_id_type": {a.cfg.IDType}}, nil, &out)
	if e := apiErrorOf(err); e != nil && e.Code == codeMessageDeleted {
		return nil, nil
	}
	if err != nil {
		a.alert(err)
		return nil, fmt.Errorf("feishu: app %q: quoted message %s: %w", a.cfg.Name, parentID, err)
	}
	// A merge forward answers its sub-messages too: the quote is the one
	// asked for.
	items := out.Data.Items
	i := slices.IndexFunc(items, func(m quotedItem) bool { return m.MessageID == parentID })
	if i < 0 {
		i = 0
	}
	if len(items) == 0 || items[i].ChatID != chatID || items[i].Deleted {
		return nil, nil
	}
	m := items[i]
	text := m.text()
	if text == "" {
		return nil, nil
	}
	q := &channels.Quote{Text: channels.TruncateUTF8(text, maxQuoteBytes)}
	if m.Sender.SenderType == "user" {
		q.SenderID = m.Sender.ID
	}
	return q, nil
}

// text renders the message's parts as one text.
func (m quotedItem) text() string {
	parts, ok := messageParts(m.MessageID, m.MsgType, m.Body.Content)
	if !ok {
		return ""
	}
	mentions := make([]mention, 0, len(m.Mentions))
	for _, mm := range m.Mentions {
		mentions = append(mentions, mention{Key: mm.Key, Name: mm.Name})
	}
	r := newMentionResolver(mentions, "")
	var lines []string
	for _, p := range parts {
		if p.Media != nil {
			lines = append(lines, strings.TrimSpace(quotePlaceholders[p.Media.Kind]+" "+p.Media.Name))
			continue
		}
		t, err := r.resolve(p.Text)
		if err != nil {
			t = strings.TrimSpace(channels.TruncateUTF8(p.Text, maxQuoteBytes)) // names past the cap: the keys stay
		}
		if t != "" {
			lines = append(lines, t)
		}
	}
	return strings.Join(lines, "\n")
}
