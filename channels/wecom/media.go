package wecom

import (
	"bytes"
	"context"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
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

// sendImage uploads out.Image as temporary media and sends it to the user
// to as an image message. Every attempt uploads again: a media_id is
// cheap, and an attempt that lost its answer may not have uploaded at all.
//
// Errors wrap channels.ErrPermanent for an image that is missing, not a
// PNG or over MaxImageBytes, and for WeCom's permanent errcodes; an
// invalidated token is refreshed once per call (upload and send each).
func (a *App) sendImage(ctx context.Context, out channels.Outbound, to string) (channels.SendResult, error) {
	if err := channels.CheckImage(out.Image, MaxImageBytes); err != nil {
		return channels.SendResult{}, fmt.Errorf("wecom: app %q: send to %q: %w", a.name, to, err)
	}
	img := out.Image
	upload, err := untilDone(ctx, func() (string, error) {
		return refreshOnce(a, func() (string, error) {
			r, err := a.media.UploadTempFileFromReader(img.FileName(), "image", bytes.NewReader(img.PNG))
			if err != nil {
				return "", err
			}
			return r.MediaID, nil
		})
	})
	if err != nil {
		return channels.SendResult{}, a.callError("media/upload", err, to)
	}
	if upload == "" {
		return channels.SendResult{}, fmt.Errorf("wecom: app %q: send to %q: media/upload answered no media_id", a.name, to)
	}

	// The duplicate check compares the media_id: it drops a copy of this
	// attempt only, not one an earlier attempt uploaded and sent.
	req := imageRequest{ToUser: to, MsgType: "image", AgentID: a.agent, Image: imageField{MediaID: upload},
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
		v, err := call()
		done <- outcome{v, err}
	}()
	select {
	case o := <-done:
		return o.v, o.err
	case <-ctx.Done():
		return zero, ctxDoneError{ctx.Err()}
	}
}
