package dingtalk

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
)

// What employees send a robot besides text, as DingTalk delivers it
// (protocols.md, "Media in messages"): picture, file, audio and video
// carry content.downloadCode; richText is a list of text items and
// picture items with their own downloadCode. A downloadCode is exchanged
// for a short-lived download URL by robot/messageFiles/download; the
// bytes are fetched from that URL without the token.

// fileContent is the content of a picture, file, audio or video message,
// and a richText item.
type fileContent struct {
	DownloadCode string `json:"downloadCode"`
	FileName     string `json:"fileName"`    // file
	Recognition  string `json:"recognition"` // audio: DingTalk's transcript
	// Type and Text are a richText item's: "picture" with a
	// downloadCode, or a text item with its text.
	Type string `json:"type"`
	Text string `json:"text"`
}

// fileRef is the channels.MediaRef.Ref of a robot message's attachment.
type fileRef struct {
	DownloadCode string `json:"downloadCode"`
}

// richPicture is a richText item's type for a picture.
const richPicture = "picture"

// richTextParts are a richText message's items in order: adjacent text
// items joined into one text part (DingTalk splits a line into items by
// style), each picture an image part. ok is false for content that is
// not a richText list.
func (m *message) richTextParts() ([]channels.Part, bool) {
	var rich struct {
		RichText []fileContent `json:"richText"`
	}
	if json.Unmarshal(m.Content, &rich) != nil {
		return nil, false
	}
	var parts []channels.Part
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			parts = append(parts, channels.Part{Text: text.String()})
			text.Reset()
		}
	}
	for _, it := range rich.RichText {
		// An item with a downloadCode and no type is read as a picture too:
		// picture is the only item kind that carries one.
		if it.Type == richPicture || it.Type == "" && it.DownloadCode != "" {
			if p, ok := attachment(channels.MediaImage, it.DownloadCode, ""); ok {
				flush()
				parts = append(parts, p)
			}
			continue
		}
		text.WriteString(it.Text)
	}
	flush()
	return parts, true
}

// fileParts is the one attachment of a picture, file or video message;
// ok is false without a downloadCode.
func (m *message) fileParts(kind string) ([]channels.Part, bool) {
	var c fileContent
	if json.Unmarshal(m.Content, &c) != nil {
		return nil, false
	}
	p, ok := attachment(kind, c.DownloadCode, c.FileName)
	if !ok {
		return nil, false
	}
	return []channels.Part{p}, true
}

// audioParts is a voice message: the text DingTalk recognised in it, when
// there is some (the model reads that, as a typed message), else the
// recording as a voice attachment.
func (m *message) audioParts() ([]channels.Part, bool) {
	var c fileContent
	if json.Unmarshal(m.Content, &c) != nil {
		return nil, false
	}
	if strings.TrimSpace(c.Recognition) != "" {
		return []channels.Part{{Text: c.Recognition}}, true
	}
	p, ok := attachment(channels.MediaVoice, c.DownloadCode, "")
	if !ok {
		return nil, false
	}
	return []channels.Part{p}, true
}

// attachment is the part of an attachment with downloadCode; ok is false
// without one.
func attachment(kind, downloadCode, name string) (channels.Part, bool) {
	if downloadCode == "" {
		return channels.Part{}, false
	}
	ref, _ := json.Marshal(fileRef{DownloadCode: downloadCode}) // a string only: it always marshals
	return channels.Part{Media: &channels.MediaRef{Kind: kind, Ref: ref, Name: channels.CleanFileName(name)}}, true
}

var _ channels.MediaFetcher = (*Channel)(nil)

// FetchMedia fetches an attachment of a message the robot named account
// received, reading at most limit bytes (channels.MediaFetcher). Errors
// wrap channels.ErrMediaRefused (unknown account, unreadable ref,
// missing permission, a download URL that is not http(s)),
// ErrMediaExpired (DingTalk no longer knows the downloadCode, or its URL
// no longer serves) or ErrMediaTooLarge; any other error (transport,
// DingTalk busy or throttling) is worth another try.
func (c *Channel) FetchMedia(ctx context.Context, account string, ref channels.MediaRef, limit int64) (channels.Attachment, error) {
	r, ok := c.robots[account]
	if !ok {
		return channels.Attachment{}, fmt.Errorf("dingtalk: unknown account %q: %w", account, channels.ErrMediaRefused)
	}
	return r.fetchMedia(ctx, ref, limit)
}

// mediaTimeout bounds one attachment: the exchange of its downloadCode
// and the download.
const mediaTimeout = 60 * time.Second

// messageFilesPath exchanges a downloadCode for a download URL.
const messageFilesPath = "/v1.0/robot/messageFiles/download"

// fileDownloadPermission is the permission the operator is pointed to when
// messageFiles/download is refused for lack of one. protocols.md names
// none: this assumes the robot's message permission, which a robot app
// holds for its messages anyway.
const fileDownloadPermission = robotSendPermission

func (r *robot) fetchMedia(ctx context.Context, ref channels.MediaRef, limit int64) (channels.Attachment, error) {
	var fr fileRef
	if err := json.Unmarshal(ref.Ref, &fr); err != nil || fr.DownloadCode == "" {
		return channels.Attachment{}, fmt.Errorf("dingtalk: robot %q: media ref %s has no downloadCode: %w", r.cfg.Name, ref.Ref, channels.ErrMediaRefused)
	}
	ctx, cancel := context.WithTimeout(ctx, mediaTimeout)
	defer cancel()
	u, err := r.downloadURL(ctx, fr.DownloadCode)
	if err != nil {
		return channels.Attachment{}, err
	}
	data, name, err := r.download(ctx, u, limit)
	if err != nil {
		return channels.Attachment{}, err
	}
	// The message's fileName first: DingTalk's storage may name the bytes
	// it serves by a generated name.
	return channels.Attachment{Data: data, Name: cmp.Or(ref.Name, name)}, nil
}

// downloadURL exchanges code for its download URL, which must be http(s).
func (r *robot) downloadURL(ctx context.Context, code string) (*url.URL, error) {
	var ans struct {
		DownloadURL string `json:"downloadUrl"`
	}
	body := map[string]string{"downloadCode": code, "robotCode": r.cfg.RobotCode}
	if err := r.api.call(ctx, http.MethodPost, messageFilesPath, body, &ans); err != nil {
		r.api.permissionHint(err, fileDownloadPermission)
		return nil, fmt.Errorf("dingtalk: robot %q: %s: %w", r.cfg.Name, messageFilesPath, fileError(err))
	}
	if ans.DownloadURL == "" {
		return nil, fmt.Errorf("dingtalk: robot %q: %s answered no downloadUrl: %w", r.cfg.Name, messageFilesPath, channels.ErrMediaExpired)
	}
	u, err := url.Parse(ans.DownloadURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("dingtalk: robot %q: downloadUrl is not an http(s) URL: %w", r.cfg.Name, channels.ErrMediaRefused)
	}
	return u, nil
}

// fileError classifies a refused exchange: a missing permission is a
// refusal; DingTalk busy, throttling or a token it keeps refusing is worth
// another try; any other refusal is about the code, which DingTalk no
// longer serves (unknown, expired, of another robot).
func fileError(err error) error {
	var ae *APIError
	switch k := kind(err); {
	case k == kindPermission, errors.As(err, &ae) && ae.Status == http.StatusForbidden:
		return fmt.Errorf("%w: %w", err, channels.ErrMediaRefused)
	case k == kindOther:
		return fmt.Errorf("%w: %w", err, channels.ErrMediaExpired)
	}
	return err // kindRetry (transport included) and kindToken
}

// download GETs u, reading at most limit bytes, and returns the bytes and
// the file name its Content-Disposition gives. The request carries no
// token: u is a storage host's, not DingTalk's API.
func (r *robot) download(ctx context.Context, u *url.URL, limit int64) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, "", fmt.Errorf("dingtalk: robot %q: download: %w: %w", r.cfg.Name, redactURL(err), channels.ErrMediaRefused)
	}
	// The API client's timeout suits a JSON answer, not a file: ctx bounds
	// the download instead.
	client := *r.api.http
	client.Timeout = 0
	resp, err := client.Do(req)
	if err != nil {
		// The URL is not logged: its query is the file's credential.
		return nil, "", fmt.Errorf("dingtalk: robot %q: download: %w", r.cfg.Name, redactURL(err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		return nil, "", fmt.Errorf("dingtalk: robot %q: download: HTTP %d", r.cfg.Name, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		// The URL is short-lived; once refused, it serves no one again.
		return nil, "", fmt.Errorf("dingtalk: robot %q: download: HTTP %d: %w", r.cfg.Name, resp.StatusCode, channels.ErrMediaExpired)
	}
	data, err := channels.ReadLimited(resp.Body, limit, resp.ContentLength)
	if err != nil {
		return nil, "", fmt.Errorf("dingtalk: robot %q: download: %w", r.cfg.Name, err)
	}
	return data, channels.DispositionName(resp.Header.Get("Content-Disposition")), nil
}
