package wecomtest

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
)

// BotFileServer serves AI bot attachments as WeCom does: each URL the
// file's bytes encrypted (AES-256-CBC, IV = key[:16], PKCS#7 to 32), with
// the file name in Content-Disposition; an expired URL answers 404.
type BotFileServer struct {
	srv   *httptest.Server
	mu    sync.Mutex
	files map[string]botFile
	gets  map[string]int
}

type botFile struct {
	body    []byte // encrypted
	name    string
	expired bool
}

// NewBotFileServer starts a file server, closed when t ends.
func NewBotFileServer(t testing.TB) *BotFileServer {
	s := &BotFileServer{files: map[string]botFile{}, gets: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// Add serves plain encrypted with key under a new URL and returns it.
func (s *BotFileServer) Add(plain, key []byte, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := fmt.Sprintf("/file/%d", len(s.files)+1)
	s.files[path] = botFile{body: EncryptBotFile(key, plain), name: name}
	return s.srv.URL + path
}

// AddRaw serves body as it is (a file that does not decrypt).
func (s *BotFileServer) AddRaw(body []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := fmt.Sprintf("/file/%d", len(s.files)+1)
	s.files[path] = botFile{body: body}
	return s.srv.URL + path
}

// Expire makes url answer 404, as WeCom does five minutes on.
func (s *BotFileServer) Expire(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := url[len(s.srv.URL):]
	f := s.files[path]
	f.expired = true
	s.files[path] = f
}

// Gets is how often url was fetched.
func (s *BotFileServer) Gets(url string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[url[len(s.srv.URL):]]
}

func (s *BotFileServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[r.URL.Path]
	s.gets[r.URL.Path]++
	s.mu.Unlock()
	if !ok || f.expired {
		http.NotFound(w, r)
		return
	}
	if f.name != "" {
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": f.name}))
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(f.body)))
	_, _ = w.Write(f.body)
}

// EncryptBotFile encrypts plain as WeCom encrypts an AI bot attachment.
func EncryptBotFile(key, plain []byte) []byte {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err)
	}
	pad := 32 - len(plain)%32
	data := append([]byte{}, plain...)
	for range pad {
		data = append(data, byte(pad))
	}
	cipher.NewCBCEncrypter(block, key[:aes.BlockSize]).CryptBlocks(data, data)
	return data
}

// BotFileKey is key as a long-connection message's aeskey.
func BotFileKey(key []byte) string { return base64.StdEncoding.EncodeToString(key) }
