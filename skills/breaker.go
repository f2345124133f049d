package skills

import (
	"errors"
	"fmt"

	"github.com/sony/gobreaker/v2"
)

// newBreaker makes the skill's circuit breaker, shared by all callers of
// this registry: a struggling backend is struggling for everyone.
//
// gobreaker reads time.Now itself, so tests drive its clock with
// testing/synctest rather than an injected clock.
func (r *Registry) newBreaker(s *Skill) *gobreaker.CircuitBreaker[Result] {
	p := s.Breaker
	return gobreaker.NewCircuitBreaker[Result](gobreaker.Settings{
		Name:        s.Name,
		MaxRequests: 1, // half-open: one probe decides
		Timeout:     p.OpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= uint32(p.Failures) },
		IsSuccessful: func(err error) bool {
			kind := classify(err)
			return kind != RetryOn5xx && kind != RetryOnTimeout
		},
		// A run that ended, or a backend asking us to slow down (429), says
		// nothing about whether the backend is broken.
		IsExcluded: func(err error) bool { return errors.Is(err, errRunEnded) || classify(err) == RetryOn429 },
		// Inside gobreaker's lock: the hook must not block (see Options).
		OnStateChange: func(name string, from, to gobreaker.State) {
			r.opts.Logger.Warn("skills: circuit breaker changed state", "skill", name, "from", from.String(), "to", to.String())
			if r.opts.OnBreakerChange != nil {
				r.opts.OnBreakerChange(name, from.String(), to.String(), r.opts.Now())
			}
		},
	})
}

// guard runs one attempt through the skill's breaker, if it has one. An
// open breaker answers ErrUnavailable and ErrCircuitOpen without calling.
func (r *Registry) guard(s *Skill, attempt func() (Result, error)) (Result, error) {
	cb := r.breakers[s.Name]
	if cb == nil {
		return attempt()
	}
	res, err := cb.Execute(attempt)
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		return Result{}, circuitOpen(s)
	}
	return res, err
}

func circuitOpen(s *Skill) error {
	return fmt.Errorf("skill %s %w: %w after repeated failures; try again in a few minutes", s.Name, ErrUnavailable, ErrCircuitOpen)
}

// breakerOpen reports whether the skill's breaker refuses calls now.
func (r *Registry) breakerOpen(s *Skill) bool {
	cb := r.breakers[s.Name]
	return cb != nil && cb.State() == gobreaker.StateOpen
}

// BreakerState reports the state of a skill's circuit breaker: "closed",
// "half-open" or "open"; "" when the skill has none or does not exist. For
// the console and metrics.
func (r *Registry) BreakerState(name string) string {
	if cb := r.breakers[name]; cb != nil {
		return cb.State().String()
	}
	return ""
}
