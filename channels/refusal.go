package channels

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Refusals: what a callback or frame failed. Each wraps ErrUnauthorized
// (401) or ErrBadRequest (400), so HTTPStatus answers it, and RefusalCheck
// names it for Sink.Refused. A platform's own sentinels wrap these with its
// prefix ("wecom: bad signature: unauthorized"), so a caller may test for
// either.
var (
	// ErrSignature: the signature is missing or does not match the token
	// or secret.
	ErrSignature = fmt.Errorf("bad signature: %w", ErrUnauthorized)
	// ErrStale: the signed timestamp is missing, unparsable or outside
	// the replay window.
	ErrStale = fmt.Errorf("stale timestamp: %w", ErrUnauthorized)
	// ErrToken: the verification token (or the app the request names) is
	// not the account's.
	ErrToken = fmt.Errorf("bad verification token: %w", ErrUnauthorized)
	// ErrCorp: signed, but naming a corp other than the configured one.
	ErrCorp = fmt.Errorf("message from another corp: %w", ErrUnauthorized)
	// ErrDecrypt: the ciphertext does not decrypt with the account's key.
	ErrDecrypt = fmt.Errorf("cannot decrypt: %w", ErrBadRequest)
	// ErrMalformed: not the platform's format, or without a field that
	// identifies the message.
	ErrMalformed = fmt.Errorf("malformed: %w", ErrBadRequest)
)

// checkOf maps a refusal to the check (a Check* word) it failed; the first
// entry the error wraps wins. It is the only such table: every platform's
// refusals wrap the sentinels above.
var checkOf = []struct {
	err   error
	check string
}{
	{ErrSignature, CheckSignature},
	{ErrStale, CheckTimestamp},
	{ErrReplayed, CheckReplay},
	{ErrCorp, CheckCorp},
	{ErrToken, CheckToken},
	{ErrDecrypt, CheckDecrypt},
	{ErrMalformed, CheckMalformed},
	{ErrBadRequest, CheckMalformed}, // a body over its bound, unreadable
}

// RefusalCheck is the check word (Check*) of a refusal, "" for an error
// that is not the request's fault (a failed Accept, a platform down).
func RefusalCheck(err error) string {
	for _, c := range checkOf {
		if errors.Is(err, c.err) {
			return c.check
		}
	}
	return ""
}

// VerifyTimestamp parses a signed timestamp, ts, in Unix units of unit
// (time.Second or time.Millisecond), and checks that it lies within window
// of now, either way: a captured callback would stay valid forever
// otherwise. It returns the signed time. Verify the signature first, so
// that a forger cannot probe the clock.
//
// Errors wrap stale, the caller's sentinel (a platform's ErrStale, which
// wraps ErrStale).
func VerifyTimestamp(ts string, unit time.Duration, now time.Time, window time.Duration, stale error) (time.Time, error) {
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: timestamp %q is not Unix %s", stale, ts, unitName(unit))
	}
	signed := time.Unix(n, 0)
	if unit == time.Millisecond {
		signed = time.UnixMilli(n)
	}
	if d := now.Sub(signed); d > window || d < -window {
		return time.Time{}, fmt.Errorf("%w: timestamp %d is %s from now, window %s", stale, n, d.Round(time.Second), window)
	}
	return signed, nil
}

func unitName(unit time.Duration) string {
	if unit == time.Millisecond {
		return "milliseconds"
	}
	return "seconds"
}
