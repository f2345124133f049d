package feishutest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Image limits the fake enforces as 上传图片 does.
const (
	CodeImageTooLarge = 234006
	CodeImageEmpty    = 234010
	maxImageBytes     = 10 << 20
	maxUploadBytes    = 11 << 20 // a cap on the request body
)

// Image is one image uploaded through POST /open-apis/im/v1/images.
type Image struct {
	Key         string // the image_key answered
	Type        string // image_type: "message" or "avatar"
	Filename    string
	ContentType string // the image part's Content-Type
	Data        []byte // the file as received
}

// Images returns the uploaded images in order.
func (s *Server) Images() []Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Image(nil), s.images...)
}

func (s *Server) handleImage(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxUploadBytes)
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		answer(w, 400, 234001, "Invalid request param: "+err.Error(), nil)
		return
	}
	typ := r.FormValue("image_type")
	file, hdr, err := r.FormFile("image")
	if err != nil || (typ != "message" && typ != "avatar") {
		answer(w, 400, 234001, "Invalid request param.", nil)
		return
	}
	defer file.Close()
	data, _ := io.ReadAll(file)
	switch {
	case len(data) == 0:
		answer(w, 400, CodeImageEmpty, "File's size can't be 0.", nil)
		return
	case len(data) > maxImageBytes:
		answer(w, 400, CodeImageTooLarge, "The file size exceed the max value.", nil)
		return
	}
	s.mu.Lock()
	img := Image{Key: fmt.Sprintf("img_v3_fake_%d", len(s.images)+1), Type: typ, Filename: hdr.Filename,
		ContentType: hdr.Header.Get("Content-Type"), Data: data}
	s.images = append(s.images, img)
	s.notify()
	s.mu.Unlock()
	answer(w, 200, 0, "success", map[string]any{"data": map[string]string{"image_key": img.Key}})
}

// knownImage reports whether an image message's content names an
// uploaded image_key; s.mu is held.
func (s *Server) knownImage(content string) bool {
	var c struct {
		ImageKey string `json:"image_key"`
	}
	if json.Unmarshal([]byte(content), &c) != nil {
		return false
	}
	for _, img := range s.images {
		if img.Key == c.ImageKey {
			return true
		}
	}
	return false
}
