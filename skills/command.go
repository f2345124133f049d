package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Exit codes of a command skill that mean "refused" (ErrRefused) rather
// than "failed" (ErrUnavailable), from BSD sysexits.h.
var refusedExitCodes = map[int]string{
	64: "EX_USAGE",
	65: "EX_DATAERR",
	77: "EX_NOPERM",
}

// commandWaitDelay is how long a killed command's pipes may stay open
// (a grandchild holding stdout) before Wait gives up on them.
const commandWaitDelay = time.Second

// stderrBytes is how much of a command's stderr goes into an error.
const stderrBytes = 4 << 10

// callCommand runs the skill's program without a shell: each argv template
// renders to exactly one argument, so quotes, spaces or ";" in the model's
// arguments stay data. The caller's identity is in the environment (and
// nothing else of Hermes's environment is), the arguments JSON on stdin.
func (r *Registry) callCommand(ctx context.Context, inv *invocation) (Result, error) {
	s, c := inv.skill, inv.skill.Command
	data, err := newTemplateData(s, inv.caller, inv.args)
	if err != nil {
		return Result{}, fmt.Errorf("skill %s: %w: %v", s.Name, ErrInvalidArguments, err)
	}
	argv := make([]string, 0, len(s.argvTmpl)+1)
	for i, t := range s.argvTmpl {
		if i == s.endOfOpts {
			argv = append(argv, "--") // what follows is data, even "-rf"
		}
		arg, err := render(t, data)
		if err != nil {
			return Result{}, fmt.Errorf("skill %s: %w: command.argv[%d]: %v", s.Name, ErrInvalidArguments, i, err)
		}
		argv = append(argv, arg)
	}
	env, err := commandEnv(inv, r.opts.Now())
	if err != nil {
		return Result{}, fmt.Errorf("skill %s: %w", s.Name, err)
	}

	callCtx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	// s.program is the path the allow-list check resolved: run exactly it,
	// never the configured path again (a symlink may have changed).
	cmd := exec.CommandContext(callCtx, s.program, argv...)
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(inv.args)
	stdout := &cappedBuffer{max: c.MaxOutputBytes, overflow: cancel}
	stderr := &cappedBuffer{max: stderrBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = commandWaitDelay
	began := r.opts.Now()
	runErr := cmd.Run()
	took := r.opts.Now().Sub(began)

	secrets := inv.creds.secrets()
	reason := func() string {
		text := strings.TrimSpace(stderr.String())
		if text == "" {
			text = strings.TrimSpace(stdout.String())
		}
		return shortBody(redact(text, secrets...), 0)
	}
	var exitErr *exec.ExitError
	switch {
	case stdout.overflowed():
		return Result{}, fmt.Errorf("skill %s %w: output exceeded %d bytes; the program was stopped", s.Name, ErrUnavailable, c.MaxOutputBytes)
	case runErr == nil:
	case ctx.Err() != nil:
		return Result{}, fmt.Errorf("skill %s: %w: %w", s.Name, errRunEnded, context.Cause(ctx))
	case callCtx.Err() != nil:
		return Result{}, fmt.Errorf("skill %s %w: no answer within %s: %w", s.Name, ErrUnavailable, s.Timeout, context.DeadlineExceeded)
	case errors.As(runErr, &exitErr) && refusedExitCodes[exitErr.ExitCode()] != "":
		return Result{}, fmt.Errorf("skill %s %w (exit %d %s): %s", s.Name, ErrRefused, exitErr.ExitCode(),
			refusedExitCodes[exitErr.ExitCode()], reason())
	case errors.As(runErr, &exitErr):
		return Result{}, fmt.Errorf("skill %s %w (%s): %s", s.Name, ErrUnavailable, exitErr.ProcessState, reason())
	default: // could not start: missing or not executable
		return Result{}, fmt.Errorf("skill %s %w: run %s: %w", s.Name, ErrMisconfigured, s.program, runErr)
	}
	out := stdout.Bytes()
	contentType := "text/plain; charset=utf-8"
	if json.Valid(out) {
		contentType = ContentJSON
	}
	return Result{Status: http.StatusOK, ContentType: contentType, Body: []byte(redact(string(out), secrets...)), Duration: took}, nil
}

// commandEnv is the whole environment of a command skill: a fixed PATH and
// the caller's identity (signed like the headers), the run's trace and the
// skill's token. Hermes's own environment (model keys, database URL) is
// never inherited.
//
// HERMES_SIGNATURE signs a SignedRequest with Method SignedMethodExec, Path
// the program run, no host or query, and the SHA-256 of stdin (the
// arguments JSON).
func commandEnv(inv *invocation, now time.Time) ([]string, error) {
	h := http.Header{}
	sr := inv.signRequest(now, SignedMethodExec, "", inv.skill.program, "", inv.args)
	if err := setIdentityHeaders(h, inv.caller, sr, inv.creds.hmacKey); err != nil {
		return nil, err
	}
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"LANG=C.UTF-8",
		"HERMES_SKILL=" + inv.skill.Name,
		"HERMES_USER_NAME=" + strings.ReplaceAll(inv.caller.Name, "\x00", ""),
		"TRACEPARENT=" + traceparent(inv.caller),
	}
	for name, header := range map[string]string{
		"HERMES_USER_ID":    HeaderUserID,
		"HERMES_CHANNEL":    HeaderChannel,
		"HERMES_ACCOUNT":    HeaderAccount,
		"HERMES_CORP_ID":    HeaderCorpID,
		"HERMES_CHAT_ID":    HeaderChatID,
		"HERMES_TIMESTAMP":  HeaderTimestamp,
		"HERMES_SIGNATURE":  HeaderSignature,
		"HERMES_NONCE":      HeaderNonce,
		"HERMES_AUDIENCE":   HeaderAudience,
		"HERMES_REQUEST_ID": HeaderRequestID,
	} {
		if v := h.Get(header); v != "" {
			env = append(env, name+"="+v)
		}
	}
	if inv.creds.token != "" {
		env = append(env, "HERMES_AUTH_TOKEN="+inv.creds.token)
	}
	return env, nil
}

// cappedBuffer keeps at most max bytes; past that it calls overflow (which
// kills the program) and fails the write, so a runaway program cannot fill
// memory. Writes come from os/exec's copying goroutine.
type cappedBuffer struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	max      int
	over     bool
	overflow func()
}

var errOutputCap = errors.New("output cap reached")

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := max(b.max-b.buf.Len(), 0)
	if len(p) <= room {
		return b.buf.Write(p)
	}
	b.buf.Write(p[:room])
	if b.overflow == nil {
		return len(p), nil // stderr: keep the start, drop the rest quietly
	}
	if !b.over {
		b.over = true
		b.overflow()
	}
	return room, errOutputCap
}

func (b *cappedBuffer) overflowed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

func (b *cappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func (b *cappedBuffer) String() string { return string(b.Bytes()) }
