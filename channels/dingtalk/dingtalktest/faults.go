package dingtalktest

import "net/http"

// LoseAnswers makes the next n robot OpenAPI sends of msgKey (e.g.
// "sampleImageMsg") be delivered and recorded, and then answered HTTP
// 500, as when DingTalk's answer is lost behind a failing gateway: the
// client cannot tell that the message went out.
func (s *Server) LoseAnswers(msgKey string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lose == nil {
		s.lose = map[string]int{}
	}
	s.lose[msgKey] = n
}

// loseAnswer answers a recorded send of msgKey with a 500 when
// LoseAnswers asked for it, and reports whether it did.
func (s *Server) loseAnswer(w http.ResponseWriter, msgKey string) bool {
	s.mu.Lock()
	lose := s.lose[msgKey] > 0
	if lose {
		s.lose[msgKey]--
	}
	s.mu.Unlock()
	if lose {
		writeError(w, http.StatusInternalServerError, "ServiceUnavailable", "injected failure after delivery")
	}
	return lose
}
