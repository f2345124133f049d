package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Call runs skill name for caller c with the model's arguments: the single
// entry point of bound tools, the route API and the gateway.
//
// In order: the caller must be allowed (ErrAccessDenied; an unknown name is
// ErrUnknownSkill), the arguments must match the schema
// (ErrInvalidArguments), the caller must have a user id (ErrNoCaller). A
// skill marked confirm then answers Result.Confirm without contacting the
// backend. Otherwise the executor runs, with retries and the skill's circuit
// breaker; while the breaker is open a configured fallback skill answers
// (Result.Fallback names it). Run errors wrap ErrMisconfigured, ErrRefused
// or ErrUnavailable (with *HTTPError for HTTP answers and ErrCircuitOpen for
// an open breaker), or the context's error when ctx ends first. No error
// carries a secret.
func (r *Registry) Call(ctx context.Context, c Caller, name string, args json.RawMessage) (Result, error) {
	return r.callByName(ctx, c, name, args, false)
}

// CallConfirmed runs a skill the user has confirmed: like Call, but a skill
// marked confirm executes instead of asking again. The gateway calls it with
// Confirmation.Skill and Confirmation.Args once the same user has answered
// 「确认」 in time; access and arguments are checked again.
func (r *Registry) CallConfirmed(ctx context.Context, c Caller, name string, args json.RawMessage) (Result, error) {
	return r.callByName(ctx, c, name, args, true)
}

func (r *Registry) callByName(ctx context.Context, c Caller, name string, args json.RawMessage, confirmed bool) (Result, error) {
	s, ok := r.byName[name]
	if !ok {
		return Result{}, fmt.Errorf("skill %s %w", name, ErrUnknownSkill)
	}
	return r.call(ctx, s, c, args, confirmed)
}

func (r *Registry) call(ctx context.Context, s *Skill, c Caller, args json.RawMessage, confirmed bool) (Result, error) {
	if !allowed(s, c) {
		return Result{}, fmt.Errorf("skill %s %w", s.Name, ErrAccessDenied)
	}
	args, err := s.validateArgs(args)
	if err != nil {
		return Result{}, err
	}
	if c.UserID == "" {
		// Fail closed: a backend must never guess whose data to return.
		return Result{}, fmt.Errorf("skill %s %w", s.Name, ErrNoCaller)
	}
	if s.needsConfirm() && !confirmed {
		prompt, err := r.confirmPrompt(s, c, args)
		if err != nil {
			return Result{}, err
		}
		return Result{Skill: s.Name, Confirm: &Confirmation{Prompt: prompt, Skill: s.Name, Args: args}}, nil
	}
	res, err := r.execute(ctx, s, c, args)
	if errors.Is(err, ErrCircuitOpen) && s.Fallback != "" {
		fb := r.byName[s.Fallback]
		fres, ferr := r.call(ctx, fb, c, args, false)
		fres.Fallback = fb.Name
		if ferr != nil {
			return fres, fmt.Errorf("%w; fallback %w", err, ferr)
		}
		r.opts.Logger.Info("skills: fallback answered", "skill", s.Name, "fallback", fb.Name, "trace_id", c.TraceID)
		return fres, nil
	}
	res.Skill = s.Name
	return res, err
}

// confirmPrompt renders the confirmation text over the arguments and the
// caller. A template that needs an argument the model left out is an
// argument error the model can fix.
func (r *Registry) confirmPrompt(s *Skill, c Caller, args json.RawMessage) (string, error) {
	data, err := newTemplateData(s, c, args)
	if err != nil {
		return "", fmt.Errorf("skill %s: %w: %v", s.Name, ErrInvalidArguments, err)
	}
	prompt, err := render(s.confirmTmpl, data)
	if err != nil {
		return "", fmt.Errorf("skill %s: %w: confirm prompt: %v", s.Name, ErrInvalidArguments, err)
	}
	return prompt, nil
}

// invocation is one call of one skill as the executors see it.
type invocation struct {
	skill       *Skill
	caller      Caller
	args        json.RawMessage // validated, model's names
	creds       credentials
	callbackURL string // async skills only
	// fileURLs are the attachments' URLs (files: true skills only), the
	// same for every attempt.
	fileURLs []string
	// idempotencyKey is the same for every attempt of this call for this
	// message; "" for read-only skills.
	idempotencyKey string
}

// executor runs one attempt. Errors follow Call's contract; a failure
// caused by ctx ending wraps errRunEnded.
type executor func(r *Registry, ctx context.Context, inv *invocation) (Result, error)

// executors run a skill by its Executor.
var executors = map[string]executor{
	ExecutorHTTP:    (*Registry).callHTTP,
	ExecutorMCP:     (*Registry).callMCP,
	ExecutorCommand: (*Registry).callCommand,
}

// execute reads the secrets, gets the file URLs and registers an async
// callback when needed, then runs attempts until one succeeds, fails for
// good, or the retry policy is spent.
func (r *Registry) execute(ctx context.Context, s *Skill, c Caller, args json.RawMessage) (Result, error) {
	creds, err := r.credentials(s)
	if err != nil {
		return Result{}, err
	}
	inv := &invocation{skill: s, caller: c, args: args, creds: creds, idempotencyKey: idempotencyKey(s, c, args)}
	if r.breakerOpen(s) {
		// Refuse before issuing file URLs or registering an async callback
		// that would never be used; guard below would refuse anyway.
		return Result{}, circuitOpen(s)
	}
	if s.Files && r.opts.Files == nil {
		return Result{}, fmt.Errorf("skill %s %w: it takes files but no file issuer is configured", s.Name, ErrMisconfigured)
	}
	if s.Async && r.opts.Async == nil {
		return Result{}, fmt.Errorf("skill %s %w: it is async but no callback registrar is configured", s.Name, ErrMisconfigured)
	}
	if s.Files {
		// Once per call, not per attempt: a retried request carries the
		// same URLs. Before Begin, so that a failure here leaves no
		// callback registered that no backend will answer.
		urls, err := r.opts.Files.Files(ctx, c, s.Name)
		if err == nil {
			err = checkFileURLs(urls)
		}
		if err != nil {
			return Result{}, fmt.Errorf("skill %s %w: issue the file URLs: %w", s.Name, ErrUnavailable, err)
		}
		inv.fileURLs = urls
	}
	if s.Async {
		// Once per call, not per attempt: a retried request must report
		// to the same place.
		if inv.callbackURL, err = r.opts.Async.Begin(ctx, c, s.Name); err != nil {
			return Result{}, fmt.Errorf("skill %s %w: register the async callback: %w", s.Name, ErrUnavailable, err)
		}
	}
	run := executors[s.Executor]
	wait := &backoff.ExponentialBackOff{InitialInterval: s.Retry.Backoff, RandomizationFactor: s.Retry.Jitter,
		Multiplier: 2, MaxInterval: s.Retry.MaxBackoff}
	wait.Reset()
	for attempt := 1; ; attempt++ {
		res, err := r.guard(s, func() (Result, error) { return run(r, ctx, inv) })
		if err == nil {
			return res, nil
		}
		kind := classify(err)
		if attempt >= s.Retry.MaxAttempts || !s.retriesOn(kind) {
			if attempt > 1 {
				err = fmt.Errorf("%w (after %d attempts)", err, attempt)
			}
			return res, err
		}
		d := wait.NextBackOff()
		var he *HTTPError
		if errors.As(err, &he) && he.RetryAfter > 0 {
			d = min(he.RetryAfter, s.Retry.MaxBackoff) // the backend knows best, within our budget
		}
		if serr := r.opts.Sleep(ctx, d); serr != nil {
			return Result{}, fmt.Errorf("skill %s: %w: %w (last attempt: %w)", s.Name, errRunEnded, serr, err)
		}
	}
}

// Failure kinds, matching the retry.on values.
const kindNone = ""

// classify names the kind of a failed attempt for retries and the breaker.
func classify(err error) string {
	var he *HTTPError
	switch {
	case err == nil, errors.Is(err, errRunEnded), errors.Is(err, ErrCircuitOpen):
		return kindNone
	case errors.As(err, &he):
		switch {
		case he.Status == 429:
			return RetryOn429
		case he.Status >= 500:
			return RetryOn5xx
		}
		return kindNone // 4xx is an answer; 3xx a misconfiguration
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, errNetwork):
		return RetryOnTimeout
	case errors.Is(err, ErrUnavailable):
		return RetryOn5xx // MCP transport failure, command crash
	}
	return kindNone
}

func (s *Skill) retriesOn(kind string) bool {
	if kind == kindNone {
		return false
	}
	for _, on := range s.Retry.On {
		if on == kind {
			return true
		}
	}
	return false
}

// errNetwork marks a request that got no answer at all (connection refused
// or reset); retried as "timeout".
var errNetwork = errors.New("network error")

// measured returns the backend's own execution time when it reports one
// (seed 003: X-Execution-Time in milliseconds), else the time we waited.
func measured(header string, waited time.Duration) time.Duration {
	var ms float64
	if _, err := fmt.Sscan(header, &ms); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	return waited
}
