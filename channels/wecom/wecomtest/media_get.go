package wecomtest

import (
	"fmt"
	"mime"
	"net/http"
	"strconv"
)

// AddMedia keeps data as the app's temporary media, as a user's image or
// voice message leaves it, and returns its media_id (for media/get).
func (s *Server) AddMedia(data []byte, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.media == nil {
		s.media = map[string]heldMedia{}
	}
	id := fmt.Sprintf("MEDIA_%d", len(s.media)+1)
	s.media[id] = heldMedia{data: data, name: name}
	return id
}

type heldMedia struct {
	data []byte
	name string
}

// MediaGets is how many media/get calls arrived.
func (s *Server) MediaGets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mediaGets
}

// handleMediaGet is GET /cgi-bin/media/get?access_token&media_id: the
// bytes with their name in Content-Disposition, or WeCom's JSON error
// (40007: an unknown or expired media_id; temporary media live 3 days).
func (s *Server) handleMediaGet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.mediaGets++
	ok := s.tokens[q.Get("access_token")]
	m, found := s.media[q.Get("media_id")]
	s.mu.Unlock()
	switch {
	case !ok:
		writeErr(w, 40014)
		return
	case !found:
		writeJSON(w, map[string]any{"errcode": 40007, "errmsg": "invalid media_id"})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": m.name}))
	w.Header().Set("Content-Length", strconv.Itoa(len(m.data)))
	_, _ = w.Write(m.data)
}
