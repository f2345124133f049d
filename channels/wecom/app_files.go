package wecom

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/silenceper/wechat/v2/util"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// What employees send a self-built app besides text: image (PicUrl,
// MediaId), voice (MediaId, Format amr), video (MediaId) and file
// (MediaId, where WeCom sends it); the bytes by
// GET /cgi-bin/media/get?access_token=&media_id= (temporary media live
// three days). Voice carries no transcript here.

// appMediaRef is the channels.MediaRef.Ref of an app attachment.
type appMediaRef struct {
	MediaID string `json:"media_id"`
}

// appMediaKinds are the message types whose MediaId is an attachment.
var appMediaKinds = map[string]string{
	"image": channels.MediaImage,
	"voice": channels.MediaVoice,
	"video": channels.MediaVideo,
	"file":  channels.MediaFile,
}

// decodeAppMedia makes an image, voice, video or file message a media
// message of one part; without a MediaId it keeps its type (answered as
// unsupported).
func decodeAppMedia(f xmlFields, in *channels.Inbound) error {
	if err := decodeByMsgID(f, in); err != nil {
		return err
	}
	id := f.get("MediaId")
	if id == "" {
		return nil
	}
	ref, _ := json.Marshal(appMediaRef{MediaID: id}) // a string: it always marshals
	in.MsgType = channels.TypeMedia
	in.Parts = []channels.Part{{Media: &channels.MediaRef{Kind: appMediaKinds[f.get("MsgType")], Ref: ref,
		Name: channels.CleanFileName(f.text("FileName"))}}}
	return nil
}

// fetchMedia downloads one attachment by media/get.
func (a *App) fetchMedia(ctx context.Context, ref channels.MediaRef, limit int64) (channels.Attachment, error) {
	var r appMediaRef
	if err := json.Unmarshal(ref.Ref, &r); err != nil || r.MediaID == "" {
		return channels.Attachment{}, fmt.Errorf("%w: no media_id", channels.ErrMediaRefused)
	}
	ctx, cancel := context.WithTimeout(ctx, wxbiz.MediaTimeout)
	defer cancel()
	att, err := refreshOnce(a, func() (channels.Attachment, error) { return a.mediaGet(ctx, r.MediaID, limit) })
	if err != nil {
		return channels.Attachment{}, err
	}
	att.Name = cmp.Or(att.Name, ref.Name)
	return att, nil
}

// mediaGet is one media/get call.
func (a *App) mediaGet(ctx context.Context, mediaID string, limit int64) (channels.Attachment, error) {
	token, err := a.media.GetAccessToken()
	if err != nil {
		return channels.Attachment{}, fmt.Errorf("wecom: app %q: media/get: token: %w", a.name, err)
	}
	u := a.tokens.base + "/cgi-bin/media/get?" + url.Values{"access_token": {token}, "media_id": {mediaID}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return channels.Attachment{}, fmt.Errorf("%w: %v", channels.ErrMediaRefused, err)
	}
	resp, err := http.DefaultClient.Do(req) // ctx bounds it
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its URL holds the token
		}
		return channels.Attachment{}, fmt.Errorf("wecom: app %q: media/get: %w", a.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return channels.Attachment{}, fmt.Errorf("wecom: app %q: media/get: HTTP %d", a.name, resp.StatusCode)
	}
	data, err := channels.ReadLimited(resp.Body, limit, resp.ContentLength)
	if err != nil {
		return channels.Attachment{}, fmt.Errorf("wecom: app %q: media/get: %w", a.name, err)
	}
	// An error is JSON, with a JSON Content-Type; the file's bytes are
	// anything else.
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "text/plain") && bytes.HasPrefix(data, []byte(`{"errcode"`)) {
		var e struct {
			ErrCode int64  `json:"errcode"`
			ErrMsg  string `json:"errmsg"`
		}
		_ = json.Unmarshal(data, &e)
		return channels.Attachment{}, a.mediaError(e.ErrCode, e.ErrMsg)
	}
	return channels.Attachment{Data: data, Name: channels.DispositionName(resp.Header.Get("Content-Disposition"))}, nil
}

// errInvalidMediaID: media/get's errcode for an unknown or expired
// media_id (temporary media live three days).
const errInvalidMediaID = 40007

// mediaError classes media/get's errcode: an invalid media_id is
// expired; an invalid token goes back to refreshOnce (as silenceper's
// error, which it reads); a transient one is retried; the rest refused.
func (a *App) mediaError(code int64, msg string) error {
	err := &util.CommonError{ErrCode: code, ErrMsg: msg}
	switch info := wxbiz.LookupCode(code); {
	case code == errInvalidMediaID:
		return fmt.Errorf("wecom: app %q: media/get: %w: %w", a.name, err, channels.ErrMediaExpired)
	case info.Action == wxbiz.RefreshToken, info.Action == wxbiz.Retry:
		return fmt.Errorf("wecom: app %q: media/get: %w", a.name, err)
	}
	return fmt.Errorf("wecom: app %q: media/get: %w: %w", a.name, err, channels.ErrMediaRefused)
}
