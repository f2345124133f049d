package channels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Media kinds: what an attachment is as the platform labels it. The bytes
// decide what Hermes does with it (gateway/media sniffs them); the kind
// only says where to look and what to call it.
const (
	MediaImage = "image"
	MediaFile  = "file"
	MediaVoice = "voice"
	MediaVideo = "video"
)

// TypeMedia is the MsgType of a message that holds attachments (images,
// files, voice without a transcript, ...), alone or among text: its Parts
// say what, in the order the user wrote them.
const TypeMedia = "media"

// MediaRef names one attachment the way its platform does: what the
// channel needs to fetch its bytes later, in the worker (never in the ack
// path). Ref is the channel's own JSON (a URL and its key, a
// downloadCode, a message id and file key); the gateway stores it and
// hands it back to FetchMedia unread.
type MediaRef struct {
	Kind string          `json:"kind"`
	Ref  json.RawMessage `json:"ref"`
	// Name is the file name the platform gave, if any: shown to the user
	// and the model, never trusted for the type.
	Name string `json:"name,omitempty"`
	// Transcript is the platform's own transcript of a voice message.
	Transcript string `json:"transcript,omitempty"`
	// Expires is when the platform stops serving it (a WeCom AI bot URL:
	// five minutes after the message); zero when unknown.
	Expires time.Time `json:"expires,omitzero"`
}

// Part is one piece of a message, in the order the user wrote them: a
// text or an attachment.
type Part struct {
	Text  string    `json:"text,omitempty"`
	Media *MediaRef `json:"media,omitempty"`
}

// Quote is a message the user quoted (replied to): context for the model,
// marked as quoted. A channel sets it only for a message of the same chat,
// which the asker has seen.
type Quote struct {
	SenderID   string `json:"sender_id,omitempty"`
	SenderName string `json:"sender_name,omitempty"`
	Text       string `json:"text"`
}

// Attachment is the bytes of an attachment as FetchMedia got them
// (decrypted).
type Attachment struct {
	Data []byte
	// Name is the file name the platform sent with the bytes
	// (Content-Disposition), or the MediaRef's.
	Name string
}

// MediaFetcher is a channel that can fetch its messages' attachments.
type MediaFetcher interface {
	// FetchMedia fetches and decrypts one attachment of a message received
	// on account, reading at most limit bytes from the platform. Errors
	// wrap ErrMediaExpired, ErrMediaTooLarge, ErrMediaUndecryptable or
	// ErrMediaRefused (anything else: the platform could not be reached,
	// worth another try).
	FetchMedia(ctx context.Context, account string, ref MediaRef, limit int64) (Attachment, error)
}

// QuoteResolver is a channel whose messages name the message they quote
// without carrying it (Feishu's parent_id): the worker asks it for the
// quote before the run, never the ack path.
type QuoteResolver interface {
	// ResolveQuote returns the message in quotes, nil when it quotes none
	// or one of another chat (the asker may see only their chat's).
	ResolveQuote(ctx context.Context, in Inbound) (*Quote, error)
}

// Why an attachment could not be fetched. Each is answered with a clear
// message and recorded; none is retried.
var (
	ErrMediaExpired       = errors.New("media: expired")
	ErrMediaTooLarge      = errors.New("media: too large")
	ErrMediaUndecryptable = errors.New("media: cannot be decrypted")
	ErrMediaRefused       = errors.New("media: refused by the platform")
)

// ReadLimited reads r to its end, refusing more than limit bytes with
// ErrMediaTooLarge (checked while reading: a platform's size claim is not
// trusted). sizeHint, the size the platform announced (Content-Length; 0
// or negative: unknown), sizes the buffer up front, up to limit, so a
// file costs its size once rather than the doublings of a growing buffer;
// a false hint costs only a regrowth.
func ReadLimited(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(max(sizeHint, 0), limit)+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(r, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("%w: over %d bytes", ErrMediaTooLarge, limit)
	}
	return buf.Bytes(), nil
}

// MaxFileNameBytes bounds a file name from a platform, shown to the model
// and the console.
const MaxFileNameBytes = 255

// CleanFileName makes a platform's file name safe to show: a name, never
// a path, within MaxFileNameBytes, valid UTF-8 without control or format
// characters. A newline would end the line of the model's [文件 …] marker
// and write a line of the sender's choosing after it; a NUL is refused by
// Postgres (the attachment's row would never be stored); a bidi override
// (U+202E) shows "gpj.exe" as "exe.jpg".
func CleanFileName(name string) string {
	name = OneLine(name)
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	// Trimmed again after the cut, which may end on a space.
	name = strings.TrimSpace(TruncateUTF8(strings.TrimSpace(name), MaxFileNameBytes))
	if name == "." || name == ".." {
		return ""
	}
	return name
}

// OneLine is s without control or format characters, line or paragraph
// separators and invalid UTF-8: a name from a platform (a file's, a
// sender's) that Hermes writes into a line of its own for the model, so
// that it cannot end that line, hide behind a bidi override or break an
// insert (NUL).
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			return -1
		}
		return r
	}, s) // a byte of invalid UTF-8 is a RuneError
}

// DispositionName is the file name of a Content-Disposition header
// (filename*, RFC 5987's encoded name, first; then filename), cleaned; ""
// without one.
func DispositionName(cd string) string {
	if cd == "" {
		return ""
	}
	_, params, err := mime.ParseMediaType(cd)
	if err != nil {
		return ""
	}
	return CleanFileName(params["filename"]) // mime decodes filename* into filename
}
