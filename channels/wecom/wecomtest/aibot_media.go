package wecomtest

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// Long-connection media upload, as the official SDK speaks it.
const (
	cmdUploadInit   = "aibot_upload_media_init"
	cmdUploadChunk  = "aibot_upload_media_chunk"
	cmdUploadFinish = "aibot_upload_media_finish"
)

// Limits the fake enforces on socket uploads.
const (
	botChunkBytes    = 512 << 10 // a chunk before base64
	botMaxChunks     = 100
	botMaxImageBytes = 2 << 20
)

// Errcodes the fake acks a bad upload frame with. WeCom's own codes for
// these cases are not documented; the client only needs a non-zero one.
const (
	codeBadParam     = 40058 // invalid parameter
	codeBadSize      = 40006 // invalid file size
	codeUnknownMedia = 40007 // invalid media_id
)

// BotUpload is one media upload the fake completed over a socket.
type BotUpload struct {
	Type, Filename string
	Chunks         int    // chunk frames received
	Data           []byte // the chunks joined, checked against size and md5
	MediaID        string
}

// botUploads tracks uploads in progress and done; the server's mu guards it.
type botUploads struct {
	open map[string]*openUpload // upload_id → in progress
	done []BotUpload
}

type openUpload struct {
	init   uploadInit
	chunks map[int][]byte
	frames int
}

type uploadInit struct {
	Type        string `json:"type"`
	Filename    string `json:"filename"`
	TotalSize   int    `json:"total_size"`
	TotalChunks int    `json:"total_chunks"`
	MD5         string `json:"md5"`
}

// Uploads returns the uploads completed so far.
func (s *BotWSServer) Uploads() []BotUpload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]BotUpload(nil), s.uploads.done...)
}

// receive handles one upload frame and returns the ack's errcode and body.
func (u *botUploads) receive(cmd string, body json.RawMessage) (int, any) {
	var f struct {
		uploadInit
		UploadID   string `json:"upload_id"`
		ChunkIndex int    `json:"chunk_index"`
		Base64Data string `json:"base64_data"`
	}
	if json.Unmarshal(body, &f) != nil {
		return codeBadParam, nil
	}
	switch cmd {
	case cmdUploadInit:
		return u.start(f.uploadInit)
	case cmdUploadChunk:
		return u.chunk(f.UploadID, f.ChunkIndex, f.Base64Data), nil
	default:
		return u.finish(f.UploadID)
	}
}

func (u *botUploads) start(in uploadInit) (int, any) {
	switch {
	case in.Type == "" || in.Filename == "" || len(in.MD5) != 32:
		return codeBadParam, nil
	case in.TotalChunks < 1 || in.TotalChunks > botMaxChunks:
		return codeBadParam, nil
	case in.TotalSize <= 0 || in.TotalSize > in.TotalChunks*botChunkBytes ||
		(in.Type == "image" && in.TotalSize > botMaxImageBytes):
		return codeBadSize, nil
	}
	if u.open == nil {
		u.open = map[string]*openUpload{}
	}
	id := "fake-upload-" + randomHex()
	u.open[id] = &openUpload{init: in, chunks: map[int][]byte{}}
	return 0, map[string]string{"upload_id": id}
}

func (u *botUploads) chunk(id string, index int, data string) int {
	up := u.open[id]
	if up == nil || index < 0 || index >= up.init.TotalChunks {
		return codeBadParam
	}
	piece, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(piece) == 0 || len(piece) > botChunkBytes {
		return codeBadSize
	}
	up.chunks[index] = piece // a repeated chunk replaces the first, idempotently
	up.frames++
	return 0
}

func (u *botUploads) finish(id string) (int, any) {
	up := u.open[id]
	if up == nil {
		return codeBadParam, nil
	}
	var data bytes.Buffer
	for i := 0; i < up.init.TotalChunks; i++ {
		piece, ok := up.chunks[i]
		if !ok {
			return codeBadParam, nil
		}
		data.Write(piece)
	}
	sum := md5.Sum(data.Bytes())
	if data.Len() != up.init.TotalSize || hex.EncodeToString(sum[:]) != up.init.MD5 {
		return codeBadSize, nil
	}
	delete(u.open, id)
	done := BotUpload{Type: up.init.Type, Filename: up.init.Filename, Chunks: up.frames, Data: data.Bytes(),
		MediaID: "fake-bot-media-" + strconv.Itoa(len(u.done)+1) + "-" + randomHex()}
	u.done = append(u.done, done)
	return 0, map[string]any{"type": done.Type, "media_id": done.MediaID}
}

// knows reports whether mediaID came from a completed upload.
func (u *botUploads) knows(mediaID string) bool {
	for _, d := range u.done {
		if d.MediaID == mediaID {
			return true
		}
	}
	return false
}
