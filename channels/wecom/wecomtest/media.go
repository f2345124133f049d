package wecomtest

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// Media limits the fake enforces as WeCom's 上传临时素材 does.
const (
	minMediaBytes  = 6        // "所有文件size必须大于5个字节"
	maxImageBytes  = 10 << 20 // images: 10 MB, JPG or PNG
	maxUploadBytes = 21 << 20 // a cap on the request body (files: 20 MB)
)

// Upload is one temporary media upload (POST /cgi-bin/media/upload) the
// fake accepted.
type Upload struct {
	Type        string // the type query parameter: "image", ...
	Filename    string // the media part's filename
	ContentType string // the media part's Content-Type
	Data        []byte // the file as received
	MediaID     string // the media_id answered
}

// Uploads returns the accepted uploads in order.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.uploads...)
}

// handleUpload is POST /cgi-bin/media/upload?access_token&type, a
// multipart/form-data body with the file under "media".
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	live := s.tokens[q.Get("access_token")]
	s.mu.Unlock()
	switch {
	case q.Get("access_token") == "":
		writeErr(w, 41001)
		return
	case !live:
		writeErr(w, 40014)
		return
	}
	mediaType := q.Get("type")
	if mediaType != "image" && mediaType != "voice" && mediaType != "video" && mediaType != "file" {
		writeJSON(w, map[string]any{"errcode": 40004, "errmsg": "invalid media type"})
		return
	}
	up, ok := readMediaPart(w, r)
	if !ok {
		return
	}
	up.Type = mediaType
	switch {
	case len(up.Data) < minMediaBytes:
		writeJSON(w, map[string]any{"errcode": 40006, "errmsg": "invalid file size"})
		return
	case mediaType == "image" && len(up.Data) > maxImageBytes:
		writeJSON(w, map[string]any{"errcode": 40009, "errmsg": "invalid image size"})
		return
	case mediaType == "image" && !isPNGOrJPEG(up.Data):
		writeJSON(w, map[string]any{"errcode": 40005, "errmsg": "invalid file type"})
		return
	}
	s.mu.Lock()
	up.MediaID = "fake-media-" + strconv.Itoa(len(s.uploads)+1) + "-" + randomHex()
	s.uploads = append(s.uploads, up)
	s.mu.Unlock()
	writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok", "type": mediaType, "media_id": up.MediaID,
		"created_at": strconv.FormatInt(s.now().Unix(), 10)})
}

// readMediaPart reads the "media" file part, answering the error itself
// when there is none.
func readMediaPart(w http.ResponseWriter, r *http.Request) (Upload, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, maxUploadBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		writeJSON(w, map[string]any{"errcode": 44001, "errmsg": "empty media data: " + err.Error()})
		return Upload{}, false
	}
	for {
		p, err := mr.NextPart()
		if err != nil {
			writeJSON(w, map[string]any{"errcode": 44001, "errmsg": "empty media data, no media part"})
			return Upload{}, false
		}
		if p.FormName() != "media" || p.FileName() == "" {
			continue
		}
		data, err := io.ReadAll(p)
		if err != nil {
			writeJSON(w, map[string]any{"errcode": 40006, "errmsg": "invalid file size: " + err.Error()})
			return Upload{}, false
		}
		return Upload{Filename: p.FileName(), ContentType: p.Header.Get("Content-Type"), Data: data}, true
	}
}

func isPNGOrJPEG(b []byte) bool {
	return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff})
}

// messageContent checks a message/send body's content as WeCom does: text
// with content, or an image with the media_id of an upload. code is the
// errcode to answer, 0 when the content is fine; s.mu is held.
func (s *Server) messageContent(body sendBody) (content, mediaID string, code int) {
	switch {
	case body.MsgType == "text" && body.Text != nil:
		if body.Text.Content == "" {
			return "", "", 44004
		}
		return body.Text.Content, "", 0
	case body.MsgType == "image" && body.Image != nil:
		for _, up := range s.uploads {
			if up.MediaID == body.Image.MediaID && body.Image.MediaID != "" {
				return "", up.MediaID, 0
			}
		}
		return "", "", 40007
	case body.MsgType == "template_card":
		content, code := s.cardContent(body.TemplateCard)
		return content, "", code
	}
	return "", "", 40008 // the fake knows text, image and template cards only
}
