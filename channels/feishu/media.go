package feishu

import (
	"context"
	"fmt"
	"net/http"

	"github.com/hermes-gw/hermes/channels"
)

// MaxImageBytes: 上传图片 (POST /open-apis/im/v1/images) takes images of at
// most 10 MB, and none of 0 bytes (code 234006 / 234010).
const MaxImageBytes = 10 << 20

// encodeBody is body's bytes and Content-Type: a channels.Form as is, anything
// else as JSON.
func encodeBody(body any) ([]byte, string, error) {
	if f, ok := body.(channels.Form); ok {
		return f.Body, f.ContentType, nil
	}
	b, err := marshalJSON(body)
	return b, "application/json; charset=utf-8", err
}

var _ channels.Uploader = (*Channel)(nil)

// Upload uploads img for the app named account (channels.Uploader).
// Feishu documents no expiry of an image_key, so it is kept for good. A
// retry would not post twice anyway (the reply's uuid), but it then
// sends the image already uploaded instead of uploading it again.
//
// Errors wrap channels.ErrPermanent for an unknown account, an image that
// is missing, not a PNG or over MaxImageBytes, and for codes no retry
// fixes; they wrap *APIError when Feishu answered.
func (c *Channel) Upload(ctx context.Context, account string, img *channels.Image) (channels.Media, error) {
	a, ok := c.apps[account]
	if !ok {
		return channels.Media{}, fmt.Errorf("feishu: unknown account %q: %w", account, channels.ErrPermanent)
	}
	key, err := a.upload(ctx, img)
	if err != nil {
		return channels.Media{}, err
	}
	return channels.Media{ID: key}, nil
}

// upload uploads img (image_type message) and returns its image_key.
func (a *App) upload(ctx context.Context, img *channels.Image) (string, error) {
	if err := channels.CheckImage(img, MaxImageBytes); err != nil {
		return "", fmt.Errorf("feishu: app %q: %w", a.cfg.Name, err)
	}
	form, err := channels.ImageForm([][2]string{{"image_type", "message"}}, "image", img)
	if err != nil {
		return "", fmt.Errorf("feishu: app %q: %w: %w", a.cfg.Name, err, channels.ErrPermanent)
	}
	var up struct {
		Data struct {
			ImageKey string `json:"image_key"`
		} `json:"data"`
	}
	err = a.api.call(ctx, "im/v1/images", http.MethodPost, "/open-apis/im/v1/images", nil,
		form, &up)
	if err == nil && up.Data.ImageKey == "" {
		err = fmt.Errorf("feishu: im/v1/images: no image_key in the answer")
	}
	if err != nil {
		a.alert(err)
		return "", fmt.Errorf("feishu: app %q: upload image: %w", a.cfg.Name, err)
	}
	return up.Data.ImageKey, nil
}

// sendImage replies to rt's message with out.Image (msg_type image): by
// the image_key the delivery layer uploaded it as (out.MediaID), or
// uploaded here when there is none. The reply carries out.Key's uuid like
// any part, so a retry after a lost answer is dropped by Feishu.
//
// Errors: see upload; the reply's wrap *APIError when Feishu answered.
func (a *App) sendImage(ctx context.Context, out channels.Outbound, rt replyTo) (channels.SendResult, error) {
	key := out.MediaID
	if key == "" {
		var err error
		if key, err = a.upload(ctx, out.Image); err != nil {
			return channels.SendResult{}, err
		}
	}
	content, err := marshalJSON(map[string]string{"image_key": key})
	if err != nil {
		return channels.SendResult{}, fmt.Errorf("feishu: app %q: %w: %w", a.cfg.Name, err, channels.ErrPermanent)
	}
	id, err := a.post(ctx, rt, "image", string(content), replyUUID(out.Key))
	if err != nil {
		a.alert(err)
		return channels.SendResult{}, fmt.Errorf("feishu: app %q: send to %s%s: %w", a.cfg.Name, rt.MessageID, rt.ChatID, err)
	}
	return channels.SendResult{MessageID: id}, nil
}
