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

// sendImage uploads out.Image (image_type message) and replies to rt's
// message with it (msg_type image). The reply carries out.Key's uuid like
// any part, so a retry after a lost answer is dropped by Feishu even though
// it uploaded again.
//
// Errors wrap channels.ErrPermanent for an image that is missing, not a
// PNG or over MaxImageBytes, and for codes no retry fixes; they wrap
// *APIError when Feishu answered.
func (a *App) sendImage(ctx context.Context, out channels.Outbound, rt replyTo) (channels.SendResult, error) {
	if err := channels.CheckImage(out.Image, MaxImageBytes); err != nil {
		return channels.SendResult{}, fmt.Errorf("feishu: app %q: %w", a.cfg.Name, err)
	}
	form, err := channels.ImageForm([][2]string{{"image_type", "message"}}, "image", out.Image)
	if err != nil {
		return channels.SendResult{}, fmt.Errorf("feishu: app %q: %w: %w", a.cfg.Name, err, channels.ErrPermanent)
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
		return channels.SendResult{}, fmt.Errorf("feishu: app %q: upload image: %w", a.cfg.Name, err)
	}
	content, err := marshalJSON(map[string]string{"image_key": up.Data.ImageKey})
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
