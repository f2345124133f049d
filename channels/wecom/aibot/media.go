package aibot

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// Media upload over an AI bot's long connection, as the official
// @wecom/aibot-node-sdk speaks it: init (type, filename, total_size,
// total_chunks, md5) → upload_id; one chunk frame per piece (upload_id,
// chunk_index, base64_data); finish (upload_id) → media_id, valid three
// days (TempMediaLifetime). Each frame waits for its ack.
const (
	botCmdUploadInit   = "aibot_upload_media_init"
	botCmdUploadChunk  = "aibot_upload_media_chunk"
	botCmdUploadFinish = "aibot_upload_media_finish"
)

// Limits of the long connection's media upload.
const (
	// botUploadChunkBytes: a chunk carries at most 512 KB before base64.
	botUploadChunkBytes = 512 << 10
	// botUploadMaxChunks: an upload has at most 100 chunks.
	botUploadMaxChunks = 100
	// BotMaxImageBytes: an image sent by an AI bot is at most 2 MB, as the
	// SDK ports of the long-connection documentation report (WeCom's
	// temporary media allow 10 MB for apps; the bot side is stricter).
	BotMaxImageBytes = 2 << 20
)

type botUploadInit struct {
	Type        string `json:"type"`
	Filename    string `json:"filename"`
	TotalSize   int    `json:"total_size"`
	TotalChunks int    `json:"total_chunks"`
	MD5         string `json:"md5"`
}

type botUploadChunk struct {
	UploadID   string `json:"upload_id"`
	ChunkIndex int    `json:"chunk_index"`
	Base64Data string `json:"base64_data"`
}

type botUploadFinish struct {
	UploadID string `json:"upload_id"`
}

// botImageMsg is an aibot_send_msg body with an uploaded image.
type botImageMsg struct {
	ChatID  string       `json:"chatid"`
	MsgType string       `json:"msgtype"`
	Image   botMediaItem `json:"image"`
}

type botMediaItem struct {
	MediaID string `json:"media_id"`
}

// Upload uploads img over the live socket; the media_id is valid
// TempMediaLifetime. A callback-mode bot answers through its
// response_url, which takes markdown only, so it cannot send images (its
// Limits say so).
//
// Errors wrap channels.ErrPermanent for callback mode, an image that is
// missing, not a PNG or over BotMaxImageBytes, and WeCom's refusals;
// without the socket on this replica (errNoSocket) or on a timeout they
// are retryable.
func (b *Bot) Upload(ctx context.Context, img *channels.Image) (channels.Media, error) {
	if b.mode != ModeWebSocket {
		return channels.Media{}, fmt.Errorf("images need the long connection: a callback-mode bot answers through response_url, which takes markdown only: %w", channels.ErrPermanent)
	}
	if err := channels.CheckImage(img, BotMaxImageBytes); err != nil {
		return channels.Media{}, err
	}
	conn := b.live.Load()
	if conn == nil {
		return channels.Media{}, errNoSocket
	}
	id, err := b.uploadImage(ctx, conn, img)
	if err != nil {
		return channels.Media{}, fmt.Errorf("upload image: %w", err)
	}
	return channels.Media{ID: id, Lifetime: wxbiz.TempMediaLifetime}, nil
}

// sendImage pushes out.Image to rt's chat with aibot_send_msg: by the
// media_id the delivery layer uploaded it as (out.MediaID), so every
// attempt sends the same media; uploaded over the socket here when there
// is none. Errors: see upload; the send needs the live socket too.
func (b *Bot) sendImage(ctx context.Context, rt botReplyTo, out channels.Outbound) error {
	if rt.Mode != ModeWebSocket {
		return fmt.Errorf("images need the long connection: a callback-mode bot answers through response_url, which takes markdown only: %w", channels.ErrPermanent)
	}
	mediaID := out.MediaID
	if mediaID == "" {
		media, err := b.Upload(ctx, out.Image)
		if err != nil {
			return err
		}
		mediaID = media.ID
	}
	conn := b.live.Load()
	if conn == nil {
		return errNoSocket
	}
	ack, err := conn.request(ctx, botCmdSendMsg, newReqID(), botImageMsg{
		ChatID: rt.ChatID, MsgType: channels.FormatImage, Image: botMediaItem{MediaID: mediaID},
	})
	if err != nil {
		return err
	}
	return ack.result().err(botCmdSendMsg)
}

// uploadImage uploads img over conn and returns its media_id.
func (b *Bot) uploadImage(ctx context.Context, conn *botConn, img *channels.Image) (string, error) {
	chunks := (len(img.PNG) + botUploadChunkBytes - 1) / botUploadChunkBytes
	if chunks > botUploadMaxChunks {
		return "", fmt.Errorf("%d chunks exceed WeCom's %d: %w", chunks, botUploadMaxChunks, channels.ErrPermanent)
	}
	sum := md5.Sum(img.PNG)
	var started struct {
		UploadID string `json:"upload_id"`
	}
	err := b.uploadStep(ctx, conn, botCmdUploadInit, botUploadInit{
		Type: channels.FormatImage, Filename: img.FileName(), TotalSize: len(img.PNG),
		TotalChunks: chunks, MD5: hex.EncodeToString(sum[:]),
	}, &started)
	if err != nil {
		return "", err
	}
	if started.UploadID == "" {
		return "", fmt.Errorf("%s: ack without upload_id", botCmdUploadInit)
	}
	for i := 0; i < chunks; i++ {
		piece := img.PNG[i*botUploadChunkBytes : min((i+1)*botUploadChunkBytes, len(img.PNG))]
		err := b.uploadStep(ctx, conn, botCmdUploadChunk, botUploadChunk{
			UploadID: started.UploadID, ChunkIndex: i, Base64Data: base64.StdEncoding.EncodeToString(piece),
		}, nil)
		if err != nil {
			return "", fmt.Errorf("chunk %d of %d: %w", i+1, chunks, err)
		}
	}
	var done struct {
		MediaID string `json:"media_id"`
	}
	if err := b.uploadStep(ctx, conn, botCmdUploadFinish, botUploadFinish{UploadID: started.UploadID}, &done); err != nil {
		return "", err
	}
	if done.MediaID == "" {
		return "", fmt.Errorf("%s: ack without media_id", botCmdUploadFinish)
	}
	return done.MediaID, nil
}

// uploadStep sends one upload frame, checks its ack and decodes the ack's
// body into out (when not nil).
func (b *Bot) uploadStep(ctx context.Context, conn *botConn, cmd string, body, out any) error {
	ack, err := conn.request(ctx, cmd, newReqID(), body)
	if err != nil {
		return err
	}
	if err := ack.result().err(cmd); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(ack.Body, out); err != nil {
		return fmt.Errorf("%s: ack body: %v", cmd, err)
	}
	return nil
}
