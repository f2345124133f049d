package dingtalk

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
)

// MaxImageBytes: 上传媒体文件 (POST oapi.dingtalk.com/media/upload) takes
// images of at most 20 MB, jpg, gif, png or bmp.
const MaxImageBytes = 20 << 20

// mediaUploadPath is the legacy media upload; the type is given in the
// query (older documentation) and in the form (newer), as both are read.
const mediaUploadPath = "/media/upload?type=image"

// encodeBody is in's bytes and Content-Type: a channels.Form as is, anything
// else as JSON.
func encodeBody(in any) ([]byte, string, error) {
	if f, ok := in.(channels.Form); ok {
		return f.Body, f.ContentType, nil
	}
	b, err := json.Marshal(in)
	return b, "application/json", err
}

// sendImage uploads img as media and sends it to rt's conversation as a
// sampleImageMsg whose photoURL is the media_id. The session webhook takes
// no uploaded media, so images always go through the OpenAPI. Every
// attempt uploads again.
//
// Errors wrap channels.ErrPermanent for an image that is missing, not a
// PNG or over MaxImageBytes, and for refusals retrying cannot fix; an
// expired token is refreshed once per call (upload and send each).
func (r *robot) sendImage(ctx context.Context, rt replyTo, img *channels.Image) error {
	if err := channels.CheckImage(img, MaxImageBytes); err != nil {
		return fmt.Errorf("dingtalk: robot %q: %w", r.cfg.Name, err)
	}
	form, err := channels.ImageForm([][2]string{{"type", "image"}}, "media", img)
	if err != nil {
		return fmt.Errorf("dingtalk: robot %q: %w: %w", r.cfg.Name, err, channels.ErrPermanent)
	}
	var up struct {
		MediaID string `json:"media_id"`
	}
	if err := r.api.callOAPI(ctx, mediaUploadPath, form, &up); err != nil {
		return fmt.Errorf("dingtalk: robot %q: media/upload: %w", r.cfg.Name, classify(err))
	}
	if up.MediaID == "" {
		return fmt.Errorf("dingtalk: robot %q: media/upload answered no media_id", r.cfg.Name)
	}
	return r.robotSend(ctx, rt, "sampleImageMsg", map[string]string{"photoURL": up.MediaID})
}
