package wecomtest

import "net/http"

// LoseAnswers makes the next n message/send calls of msgType ("text",
// "image") that WeCom accepts go unanswered: the message is recorded
// (delivered, or suppressed by the duplicate check) and the connection is
// closed, as when WeCom's answer is lost on the way back. The client
// cannot tell whether it was delivered.
func (s *Server) LoseAnswers(msgType string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loseAnswers == nil {
		s.loseAnswers = map[string]int{}
	}
	s.loseAnswers[msgType] = n
}

// loseAnswer reports whether the answer to an accepted send of msgType is
// to be lost, and counts it; s.mu is held.
func (s *Server) loseAnswer(msgType string) bool {
	if s.loseAnswers[msgType] <= 0 {
		return false
	}
	s.loseAnswers[msgType]--
	return true
}

// dropConnection closes w's connection without an answer.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}
