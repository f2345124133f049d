package wecom

import (
	"bytes"
	"context"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/guard"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// MaxImageBytes: an image uploaded as temporary media (上传临时素材,
// POST /cgi-bin/media/upload, document/path/90253) is at most 10 MB, JPG
// or PNG; larger uploads are refused.
const MaxImageBytes = 10 << 20

// imageRequest is the message/send body for an image message: the
// media_id of an uploaded temporary media (valid three days).
type imageRequest struct {
	ToUser  string     `json:"touser"`
	MsgType string     `json:"msgtype"`
	AgentID int64      `json:"agentid"`
	Image   imageField `json:"image"`
	duplicateCheck
}

type imageField struct {
	MediaID string `json:"media_id"`
}

var _ channels.Uploader = (*Channel)(nil)

// Upload uploads img for the app or AI bot named account (channels.Uploader):
// as an app's temporary media, or over a bot's long connection. The
// delivery layer keeps the media_id and sends every attempt with it.
//
// Errors: see App.upload and Bot.upload; an unknown account wraps
// channels.ErrPermanent.
func (c *Channel) Upload(ctx context.Context, account string, img *channels.Image) (channels.Media, error) {
	if b, ok := c.bots[account]; ok {
		m, err := b.Upload(ctx, img)
		if err != nil {
			return channels.Media{}, fmt.Errorf("wecom: bot %q: %w", account, err)
		}
		return m, nil
	}
	a, ok := c.apps[account]
	if !ok {
		return channels.Media{}, fmt.Errorf("wecom: unknown account %q: %w", account, channels.ErrPermanent)
	}
	return a.upload(ctx, img)
}

// upload uploads img as the app's temporary media.
//
// Errors wrap channels.ErrPermanent for an image that is missing, not a
// PNG or over MaxImageBytes, and for WeCom's permanent errcodes; an
// invalidated token is refreshed once.
func (a *App) upload(ctx context.Context, img *channels.Image) (channels.Media, error) {
	if err := channels.CheckImage(img, MaxImageBytes); err != nil {
		return channels.Media{}, fmt.Errorf("wecom: app %q: %w", a.name, err)
	}
	id, err := untilDone(ctx, func() (string, error) {
		return refreshOnce(a, func() (string, error) {
			r, err := a.media.UploadTempFileFromReader(img.FileName(), "image", bytes.NewReader(img.PNG))
			if err != nil {
				return "", err
			}
			return r.MediaID, nil
		})
	})
	if err != nil {
		return channels.Media{}, a.callError("media/upload", err, "upload")
	}
	if id == "" {
		return channels.Media{}, fmt.Errorf("wecom: app %q: media/upload answered no media_id", a.name)
	}
	return channels.Media{ID: id, Lifetime: wxbiz.TempMediaLifetime}, nil
}

// sendImage sends out.Image to the user to as an image message: the
// media_id the delivery layer uploaded it as (out.MediaID), so that a
// retry asking for the duplicate check names the media of the first
// attempt and WeCom drops the copy; uploaded here when there is none.
//
// Errors wrap channels.ErrPermanent for an image that is missing, not a
// PNG or over MaxImageBytes, and for WeCom's permanent errcodes; an
// invalidated token is refreshed once per call (upload and send each).
func (a *App) sendImage(ctx context.Context, out channels.Outbound, to string) (channels.SendResult, error) {
	mediaID := out.MediaID
	if mediaID == "" {
		media, err := a.upload(ctx, out.Image)
		if err != nil {
			return channels.SendResult{}, err
		}
		mediaID = media.ID
	}
	// The duplicate check compares the media_id: with the same id on
	// every attempt it drops the copy an interrupted attempt delivered.
	req := imageRequest{ToUser: to, MsgType: "image", AgentID: a.agent, Image: imageField{MediaID: mediaID},
		duplicateCheck: a.duplicateCheck(out)}
	return a.post(ctx, "MessageSendImage", req, to)
}

// refreshOnce calls call once and, when WeCom says the token is invalid
// or expired (it may revoke one before expires_in), drops the cached token
// and calls once more with a fresh one. WeCom refused the first call, so
// the second cannot duplicate it.
func refreshOnce[T any](a *App, call func() (T, error)) (T, error) {
	v, err := call()
	if err == nil || !refreshesToken(err) {
		return v, err
	}
	if derr := a.tokens.invalidate(); derr != nil {
		var zero T
		return zero, derr
	}
	return call()
}

// ctxDoneError is untilDone's error when ctx ended before the call did.
type ctxDoneError struct{ err error }

func (e ctxDoneError) Error() string { return e.err.Error() }
func (e ctxDoneError) Unwrap() error { return e.err }

// untilDone runs call, which takes no context (silenceper's API), and
// returns its result, or a ctxDoneError when ctx ends first. The call then
// finishes on its own within the HTTP client timeout, and may still reach
// WeCom.
func untilDone[T any](ctx context.Context, call func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, ctxDoneError{err}
	}
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		// The call decodes WeCom's answer: a panic there is an error of
		// this call, never the process's.
		var o outcome
		o.err = guard.Run(func() (err error) {
			o.v, err = call()
			return err
		})
		done <- o
	}()
	select {
	case o := <-done:
		return o.v, o.err
	case <-ctx.Done():
		return zero, ctxDoneError{ctx.Err()}
	}
}
