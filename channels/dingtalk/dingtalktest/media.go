package dingtalktest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// Media limits the fake enforces as 上传媒体文件 does.
const (
	maxImageBytes  = 20 << 20 // image: 20 MB, jpg/gif/png/bmp
	maxUploadBytes = 21 << 20 // a cap on the request body
)

// Upload is one media upload (POST /media/upload) the fake accepted.
type Upload struct {
	Type        string // the type form field (or query parameter)
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

// mediaUpload is the legacy POST /media/upload?access_token: a
// multipart/form-data body with type and the file under "media"; errors
// answer errcode in a 200, as the legacy API does.
func (s *Server) mediaUpload(w http.ResponseWriter, r *http.Request) {
	if !s.live(r.URL.Query().Get("access_token")) {
		writeJSON(w, map[string]any{"errcode": 40014, "errmsg": "不合法的access_token"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxUploadBytes)
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		writeJSON(w, map[string]any{"errcode": 40035, "errmsg": "缺少参数 media: " + err.Error()})
		return
	}
	typ := r.FormValue("type") // the form, then the query
	file, hdr, err := r.FormFile("media")
	if err != nil {
		writeJSON(w, map[string]any{"errcode": 40035, "errmsg": "缺少参数 media"})
		return
	}
	defer file.Close()
	data, _ := io.ReadAll(file)
	switch {
	case typ != "image" && typ != "voice" && typ != "file":
		writeJSON(w, map[string]any{"errcode": 40004, "errmsg": "不合法的媒体文件类型"})
		return
	case len(data) == 0 || (typ == "image" && len(data) > maxImageBytes):
		writeJSON(w, map[string]any{"errcode": 40006, "errmsg": "不合法的文件大小"})
		return
	case typ == "image" && !isImage(data):
		writeJSON(w, map[string]any{"errcode": 40005, "errmsg": "不合法的文件类型"})
		return
	}
	s.mu.Lock()
	up := Upload{Type: typ, Filename: hdr.Filename, ContentType: hdr.Header.Get("Content-Type"), Data: data,
		MediaID: fmt.Sprintf("@lADPfake%d", len(s.uploads)+1)}
	s.uploads = append(s.uploads, up)
	s.recordLocked()
	s.mu.Unlock()
	writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok", "type": typ, "media_id": up.MediaID, "created_at": 1700000000000})
}

// isImage reports a jpg, gif, png or bmp by its magic bytes.
func isImage(b []byte) bool {
	for _, magic := range []string{"\x89PNG\r\n\x1a\n", "\xff\xd8\xff", "GIF8", "BM"} {
		if bytes.HasPrefix(b, []byte(magic)) {
			return true
		}
	}
	return false
}

// knowsUpload reports whether id is an upload's media_id.
func (s *Server) knowsUpload(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, up := range s.uploads {
		if up.MediaID == id {
			return true
		}
	}
	return false
}
