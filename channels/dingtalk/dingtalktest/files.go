package dingtalktest

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The files of robot messages: robot/messageFiles/download exchanges a
// message's downloadCode for a short-lived downloadUrl, which serves the
// bytes without a token (on DingTalk, a storage host; here, the fake's
// own /files/ path).

// filesPath is where the fake serves downloadUrls.
const filesPath = "/files/"

// robotFile is one attachment a message may carry.
type robotFile struct {
	data    []byte
	name    string // Content-Disposition's filename; "" sends none
	expired bool   // the exchange refuses the code
	url     string // answered instead of the fake's own downloadUrl
}

// FileStats counts the fake's file traffic.
type FileStats struct {
	Exchanges int // messageFiles/download calls answered with a downloadUrl
	Gets      int // GETs of a downloadUrl path, served or not
	// TokenGets counts GETs of a downloadUrl that carried an access token
	// the fake handed out, in any header or the URL: never should one.
	TokenGets int
}

// AddFile registers data as an attachment, served with name in
// Content-Disposition (none when name is ""), and returns its
// downloadCode for a message.
func (s *Server) AddFile(data []byte, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.files == nil {
		s.files = map[string]*robotFile{}
	}
	code := fmt.Sprintf("dlcode-%d", len(s.files)+1)
	s.files[code] = &robotFile{data: data, name: name}
	return code
}

// Expire makes the exchange of code fail as DingTalk refuses a code it
// no longer serves: HTTP 400 with an error code. The exact code is not
// documented in protocols.md; the client classifies by status.
func (s *Server) Expire(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[code]; f != nil {
		f.expired = true
	}
}

// SetDownloadURL makes the exchange of code answer u as its downloadUrl
// (a URL that has expired, or is not http).
func (s *Server) SetDownloadURL(code, u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.files[code]; f != nil {
		f.url = u
	}
}

// FileStats returns the file traffic so far.
func (s *Server) FileStats() FileStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fileStats
}

// messageFiles is POST /v1.0/robot/messageFiles/download
// {downloadCode, robotCode} → {downloadUrl}.
func (s *Server) messageFiles(w http.ResponseWriter, body []byte, _ string) {
	var req struct {
		DownloadCode string `json:"downloadCode"`
		RobotCode    string `json:"robotCode"`
	}
	if err := json.Unmarshal(body, &req); err != nil || req.DownloadCode == "" || req.RobotCode == "" {
		writeError(w, http.StatusBadRequest, "MissingParameter", "downloadCode and robotCode are required")
		return
	}
	if req.RobotCode != s.appKey {
		writeError(w, http.StatusBadRequest, "InvalidParameter.RobotCode", "robotCode is not this app's robot")
		return
	}
	s.mu.Lock()
	f := s.files[req.DownloadCode]
	if f == nil || f.expired {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "InvalidParameter.DownloadCode", "downloadCode 无效或已过期")
		return
	}
	u := f.url
	if u == "" {
		u = s.srv.URL + filesPath + url.PathEscape(req.DownloadCode) + "?Expires=1700000300&Signature=fake"
	}
	s.fileStats.Exchanges++
	s.recordLocked()
	s.mu.Unlock()
	writeJSON(w, map[string]string{"downloadUrl": u})
}

// serveFile is GET of a downloadUrl: the bytes with Content-Length, and
// the name in Content-Disposition (filename*=UTF-8”…, as storage hosts
// send a non-ASCII name).
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	code, _ := url.PathUnescape(strings.TrimPrefix(r.URL.Path, filesPath))
	s.mu.Lock()
	s.fileStats.Gets++
	if s.carriesToken(r) {
		s.fileStats.TokenGets++
	}
	f := s.files[code]
	s.recordLocked()
	s.mu.Unlock()
	if f == nil || r.URL.Query().Get("Signature") == "" {
		// As a storage host answers an unsigned or unknown object.
		http.Error(w, "AccessDenied", http.StatusForbidden)
		return
	}
	if f.name != "" {
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.name}))
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
	_, _ = w.Write(f.data)
}

// carriesToken reports whether r holds a token the fake handed out
// anywhere a client might put one; s.mu is held.
func (s *Server) carriesToken(r *http.Request) bool {
	for tok := range s.tokens {
		if strings.Contains(r.URL.RawQuery, tok) {
			return true
		}
		for _, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, tok) {
					return true
				}
			}
		}
	}
	return false
}
