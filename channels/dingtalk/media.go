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

var _ channels.Uploader = (*Channel)(nil)

// Upload uploads img as the robot's media (channels.Uploader). DingTalk
// keeps a media_id for as long as the organisation exists (媒体文件:
// "no time limit on how long files are stored"), so it never expires.
// The delivery layer keeps it and sends every attempt with it.
//
// Errors wrap channels.ErrPermanent for an unknown account, an image that
// is missing, not a PNG or over MaxImageBytes, and for refusals retrying
// cannot fix; an expired token is refreshed once.
func (c *Channel) Upload(ctx context.Context, account string, img *channels.Image) (channels.Media, error) {
	r, ok := c.robots[account]
	if !ok {
		return channels.Media{}, fmt.Errorf("dingtalk: unknown account %q: %w", account, channels.ErrPermanent)
	}
	id, err := r.upload(ctx, img)
	if err != nil {
		return channels.Media{}, err
	}
	return channels.Media{ID: id}, nil
}

// upload uploads img (media/upload) and returns its media_id.
func (r *robot) upload(ctx context.Context, img *channels.Image) (string, error) {
	if err := channels.CheckImage(img, MaxImageBytes); err != nil {
		return "", fmt.Errorf("dingtalk: robot %q: %w", r.cfg.Name, err)
	}
	form, err := channels.ImageForm([][2]string{{"type", "image"}}, "media", img)
	if err != nil {
		return "", fmt.Errorf("dingtalk: robot %q: %w: %w", r.cfg.Name, err, channels.ErrPermanent)
	}
	var up struct {
		MediaID string `json:"media_id"`
	}
	if err := r.api.callOAPI(ctx, mediaUploadPath, form, &up); err != nil {
		return "", fmt.Errorf("dingtalk: robot %q: media/upload: %w", r.cfg.Name, classify(err))
	}
	if up.MediaID == "" {
		return "", fmt.Errorf("dingtalk: robot %q: media/upload answered no media_id", r.cfg.Name)
	}
	return up.MediaID, nil
}

// sendImage sends out.Image to rt's conversation as a sampleImageMsg
// whose photoURL is its media_id: the one the delivery layer uploaded it
// as (out.MediaID), so every attempt sends the same media, or uploaded
// here when there is none. The session webhook takes no uploaded media,
// so images always go through the OpenAPI.
//
// Errors: see upload; the send's refusals retrying cannot fix wrap
// channels.ErrPermanent too.
func (r *robot) sendImage(ctx context.Context, rt replyTo, out channels.Outbound) error {
	mediaID := out.MediaID
	if mediaID == "" {
		id, err := r.upload(ctx, out.Image)
		if err != nil {
			return err
		}
		mediaID = id
	}
	return r.robotSend(ctx, rt, "sampleImageMsg", map[string]string{"photoURL": mediaID})
}
