package openaiapi

import (
	"net/http"
	"sync"
	"time"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ratelimit"
)

// Each key of the OpenAI-compatible API may run a few requests at once and
// start a minute's worth per minute, so that one client (a script in a
// loop, a stuck retry) cannot take model.max_concurrent's slots from other
// keys and from chat users. Both limits are per replica, like the model's:
// behind a load balancer with n replicas a key gets up to n times them.
// Over a limit the answer is OpenAI's own 429, so the SDKs' retry logic
// applies: {"error":{"message":…,"type":"requests","param":null,
// "code":"rate_limit_exceeded"}} with Retry-After in seconds.

// OpenAI's type and code of a 429 for requests (its "tokens" type is for
// token budgets, which Hermes does not count per key).
const (
	errTypeRequests = "requests"
	codeRateLimited = "rate_limit_exceeded"
)

// busyRetryAfter is the Retry-After of a request over the concurrency
// limit: a run's end cannot be predicted, and most end within seconds.
const busyRetryAfter = time.Second

// limits are the per-key limits of one replica. The zero value is ready.
type limits struct {
	minute ratelimit.PerKey // requests per minute, by key

	mu       sync.Mutex
	inFlight map[string]int // requests running, by key
}

// admit lets a request of key start at now, or refuses it with a 429
// *apiError. release, called once when the request ends, frees its place.
func (l *limits) admit(cfg config.OpenAIAPIConfig, key config.OpenAIKey, now time.Time) (release func(), err error) {
	concurrent, perMinute := cfg.LimitsOf(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight == nil {
		l.inFlight = map[string]int{}
	}
	if running := l.inFlight[key.Key]; running >= concurrent {
		return nil, tooManyRequests(busyRetryAfter,
			"Too many concurrent requests for this key: limit %d (openai_api.max_concurrent_per_key), running %d. Please try again in %s.",
			concurrent, running, busyRetryAfter)
	}
	if wait, ok := l.minute.Take(key.Key, perMinute, now); !ok {
		return nil, tooManyRequests(wait,
			"Rate limit reached on requests per min (RPM): Limit %d (openai_api.requests_per_minute_per_key). Please try again in %ds.",
			perMinute, ratelimit.RetryAfterSeconds(wait))
	}
	l.inFlight[key.Key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.inFlight[key.Key]--; l.inFlight[key.Key] <= 0 {
				delete(l.inFlight, key.Key)
			}
		})
	}, nil
}

// tooManyRequests is a 429 in OpenAI's shape that says when to try again.
func tooManyRequests(wait time.Duration, format string, args ...any) *apiError {
	e := newAPIError(http.StatusTooManyRequests, errTypeRequests, codeRateLimited, "", format, args...)
	e.retryAfter = wait
	return e
}
