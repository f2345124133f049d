package openaitest

import (
	"io"
	"net/http"
	"slices"
)

// maxAudioBytes is OpenAI's limit on an uploaded audio file (25 MB).
const maxAudioBytes = 25 << 20

// Transcription is one POST /v1/audio/transcriptions request as OpenAI
// reads it: a multipart form with the audio in "file".
type Transcription struct {
	Model, Language, ResponseFormat string
	FileName                        string // the file part's filename: OpenAI picks the format by its extension
	Audio                           []byte
}

// SetTranscriber answers each transcription request with h's reply: its
// Content is the text, a Status other than 200 an OpenAI error. Without
// one, every request gets DefaultContent.
func (s *Server) SetTranscriber(h func(Transcription) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcribe = h
}

// Transcriptions returns the transcription requests received so far.
func (s *Server) Transcriptions() []Transcription {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.transcribed)
}

func (s *Server) transcriptions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	key, h := s.key, s.transcribe
	s.mu.Unlock()
	if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxAudioBytes+1<<20)
	if err := r.ParseMultipartForm(maxAudioBytes); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "could not parse multipart form: "+err.Error())
		return
	}
	f, hdr, err := r.FormFile("file")
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "'file' is a required property")
		return
	}
	defer f.Close()
	audio, err := io.ReadAll(f)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	t := Transcription{Model: r.FormValue("model"), Language: r.FormValue("language"),
		ResponseFormat: r.FormValue("response_format"), FileName: hdr.Filename, Audio: audio}
	if t.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "you must provide a model parameter")
		return
	}
	s.mu.Lock()
	s.transcribed = append(s.transcribed, t)
	s.mu.Unlock()
	reply := Reply{Content: DefaultContent}
	if h != nil {
		reply = h(t)
	}
	if reply.Hook != nil {
		if err := reply.Hook(r.Context()); err != nil {
			writeError(w, http.StatusInternalServerError, "server_error", "", err.Error())
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, "server_error", "", reply.Content)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"text": reply.Content})
}
