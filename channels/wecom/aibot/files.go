package aibot

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// What employees send an AI bot besides text, as the official
// @wecom/aibot-node-sdk reads it: image, file and video carry {url,
// aeskey?}; the URL serves the bytes encrypted for five minutes. In
// long-connection mode each URL comes with its own aeskey (base64 of 32
// bytes); in callback mode none does, and the bot's EncodingAESKey is the
// key. Either way AES-256-CBC, IV = key[:16], PKCS#7 padding to 32-byte
// blocks.

// BotMediaLifetime is how long WeCom serves a message's media URL.
const BotMediaLifetime = 5 * time.Minute

// botFile is an image, file or video of a message (or of a mixed item).
type botFile struct {
	URL    string `json:"url"`
	AESKey string `json:"aeskey"`
}

// botMediaRef is the channels.MediaRef.Ref of an AI bot attachment.
type botMediaRef struct {
	URL    string `json:"url"`
	AESKey string `json:"aeskey,omitempty"`
}

// botQuote is the message a user quoted: its type and content, no sender.
type botQuote struct {
	MsgType string    `json:"msgtype"`
	Text    *botText  `json:"text"`
	Voice   *botText  `json:"voice"`
	Mixed   *botMixed `json:"mixed"`
	Image   *botFile  `json:"image"`
	File    *botFile  `json:"file"`
}

// maxQuoteBytes bounds the quoted text the model sees.
const maxQuoteBytes = 4 << 10

// quote is the quoted message as context: its text, with a note for an
// image or file (their bytes are not fetched: the user quoted them to ask
// about the conversation, and the quoted URL may be long expired).
func (q *botQuote) quote() *channels.Quote {
	if q == nil {
		return nil
	}
	var text string
	switch {
	case q.Text != nil:
		text = q.Text.Content
	case q.Voice != nil:
		text = q.Voice.Content
	case q.Mixed != nil:
		var parts []string
		for _, it := range q.Mixed.Items {
			if it.Text != nil {
				parts = append(parts, it.Text.Content)
			}
		}
		text = strings.Join(parts, "\n")
	}
	if text == "" {
		return nil
	}
	return &channels.Quote{Text: channels.TruncateUTF8(text, maxQuoteBytes)}
}

// parts are a mixed message's text and image items, in order.
func (m *botMixed) parts() []channels.Part {
	var out []channels.Part
	for _, it := range m.Items {
		switch {
		case it.MsgType == channels.TypeText && it.Text != nil:
			out = append(out, channels.Part{Text: it.Text.Content})
		case it.MsgType == botTypeImage:
			out = append(out, fileParts(channels.MediaImage, it.Image)...)
		}
	}
	return out
}

// fileParts is the one part of an attachment; none without a URL.
func fileParts(kind string, f *botFile) []channels.Part {
	if f == nil || f.URL == "" {
		return nil
	}
	ref, _ := json.Marshal(botMediaRef(*f)) // strings only: it always marshals
	return []channels.Part{{Media: &channels.MediaRef{Kind: kind, Ref: ref}}}
}

// setParts makes in a media message of parts when one of them is an
// attachment, a text message otherwise; Text is their text either way.
func setParts(in *channels.Inbound, parts []channels.Part) {
	var text []string
	media := false
	for _, p := range parts {
		if p.Media != nil {
			media = true
		} else {
			text = append(text, p.Text)
		}
	}
	in.Text = strings.Join(text, "\n")
	if media {
		in.MsgType, in.Parts = channels.TypeMedia, parts
	} else {
		in.MsgType = channels.TypeText
	}
}

// dateParts sets when each attachment's URL stops working.
func (b *Bot) dateParts(parts []channels.Part) {
	for _, p := range parts {
		if p.Media != nil {
			p.Media.Expires = b.now().Add(BotMediaLifetime)
		}
	}
}

// FetchMedia downloads and decrypts one attachment, reading at most limit
// bytes (plus the padding) from WeCom.
func (b *Bot) FetchMedia(ctx context.Context, ref channels.MediaRef, limit int64) (channels.Attachment, error) {
	var r botMediaRef
	if err := json.Unmarshal(ref.Ref, &r); err != nil {
		return channels.Attachment{}, fmt.Errorf("%w: %v", channels.ErrMediaRefused, err)
	}
	key, err := b.mediaKey(r.AESKey)
	if err != nil {
		return channels.Attachment{}, err
	}
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return channels.Attachment{}, fmt.Errorf("%w: not an http(s) URL", channels.ErrMediaRefused)
	}
	ctx, cancel := context.WithTimeout(ctx, b.timing.Media)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return channels.Attachment{}, fmt.Errorf("%w: %v", channels.ErrMediaRefused, err)
	}
	// The guard allows only WeCom's hosts and public addresses: a URL
	// elsewhere is refused (logged and counted there) like any URL WeCom
	// no longer serves, and the user hears the same sentence.
	resp, err := b.mediaClient.Do(req)
	if errors.Is(err, channels.ErrFetchRefused) {
		return channels.Attachment{}, fmt.Errorf("wecom: bot %q: media: %w: %w", b.name, redactURL(err), channels.ErrMediaRefused)
	}
	if err != nil {
		// The URL's query is the file's credential: not in errors.
		return channels.Attachment{}, fmt.Errorf("wecom: bot %q: media: %w", b.name, redactURL(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		return channels.Attachment{}, fmt.Errorf("wecom: bot %q: media: HTTP %d", b.name, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		// An expired URL is refused; WeCom serves it again to no one.
		return channels.Attachment{}, fmt.Errorf("%w: HTTP %d", channels.ErrMediaExpired, resp.StatusCode)
	}
	data, err := channels.ReadLimited(resp.Body, limit+wxbiz.PadBlock, resp.ContentLength)
	if err != nil {
		return channels.Attachment{}, fmt.Errorf("wecom: bot %q: media: %w", b.name, err)
	}
	plain, err := DecryptMedia(key, data)
	if err != nil {
		return channels.Attachment{}, err
	}
	if int64(len(plain)) > limit {
		return channels.Attachment{}, fmt.Errorf("%w: over %d bytes", channels.ErrMediaTooLarge, limit)
	}
	return channels.Attachment{Data: plain, Name: channels.DispositionName(resp.Header.Get("Content-Disposition"))}, nil
}

// mediaKey is the key of an attachment: its own aeskey (long connection),
// else the bot's EncodingAESKey (callback mode).
func (b *Bot) mediaKey(aesKey string) ([]byte, error) {
	if aesKey == "" {
		if b.crypto == nil {
			return nil, fmt.Errorf("%w: no aeskey with the URL", channels.ErrMediaUndecryptable)
		}
		return b.crypto.Key(), nil
	}
	key, err := base64.StdEncoding.DecodeString(aesKey)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(aesKey, "="))
	}
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("%w: aeskey is not base64 of 32 bytes", channels.ErrMediaUndecryptable)
	}
	return key, nil
}

// errMediaPadding: the bytes did not decrypt to a PKCS#7-padded plaintext
// (a wrong key, a truncated or altered file).
var errMediaPadding = errors.New("bad padding")

// DecryptMedia decrypts an AI bot attachment in place: AES-256-CBC with
// IV = key[:16], PKCS#7 padding of 1 to 32 bytes. Errors wrap
// channels.ErrMediaUndecryptable.
func DecryptMedia(key, data []byte) ([]byte, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", channels.ErrMediaUndecryptable, err)
	}
	if len(data) == 0 || len(data)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("%w: %d bytes are not whole AES blocks", channels.ErrMediaUndecryptable, len(data))
	}
	cipher.NewCBCDecrypter(block, key[:aes.BlockSize]).CryptBlocks(data, data)
	pad := int(data[len(data)-1])
	if pad < 1 || pad > wxbiz.PadBlock || pad > len(data) {
		return nil, fmt.Errorf("%w: %w", channels.ErrMediaUndecryptable, errMediaPadding)
	}
	for _, c := range data[len(data)-pad:] {
		if int(c) != pad {
			return nil, fmt.Errorf("%w: %w", channels.ErrMediaUndecryptable, errMediaPadding)
		}
	}
	return data[:len(data)-pad], nil
}

// redactURL drops the URL from a *url.Error, keeping what went wrong: a
// media URL's or response_url's query is a credential.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
