package agent

import "github.com/hermes-gw/hermes/skills"

// What the agent masks on its own path, for the paths around it (the
// gateway's confirmation and async results, traces): every path that
// stores a call or shows its result masks it the same way.

// MaskedArgs returns tool arguments as they may be stored in a trace: the
// values of secret keys (password, token...) replaced by "***".
func MaskedArgs(args string) string { return maskSecrets(args) }

// MaskedResult returns what of a skill's answer may be stored or shown:
// the observation the model would see, with debug fields dropped and
// personal numbers masked outside spec.SafeFields, cut to limit bytes
// (DefaultMaxObservationBytes when limit <= 0).
func MaskedResult(res skills.Result, spec skills.Spec, limit int) string {
	if limit <= 0 {
		limit = DefaultMaxObservationBytes
	}
	var keep safeSet
	return observeResult(res, spec, limit, &keep).text
}

// MaskedText masks personal numbers (mobile and ID numbers) in text bound
// for a chat or a trace.
func MaskedText(s string) string { return maskPII(s, nil) }
