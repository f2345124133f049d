package gateway

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// Async callback tokens: base64url(nonce) "." base64url(HMAC-SHA256(key,
// nonce)). The signature lets a forged URL be refused before any database
// work; the table stores only SHA-256(token), and a token works once.
const asyncNonceBytes = 18

func (g *Gateway) signToken(nonce []byte) string {
	mac := hmac.New(sha256.New, []byte(g.cfg.Server.CallbackKey))
	mac.Write(nonce)
	enc := base64.RawURLEncoding
	return enc.EncodeToString(nonce) + "." + enc.EncodeToString(mac.Sum(nil))
}

// verifyToken checks a token's signature in constant time.
func (g *Gateway) verifyToken(token string) bool {
	nonceText, _, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	nonce, err := base64.RawURLEncoding.DecodeString(nonceText)
	if err != nil || len(nonce) != asyncNonceBytes {
		return false
	}
	return hmac.Equal([]byte(g.signToken(nonce)), []byte(token))
}

func tokenHash(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// asyncRegistrar gives each async skill call its callback URL, recording
// the task first so that a result can never arrive for an unknown task.
type asyncRegistrar struct{ g *Gateway }

// Begin implements skills.AsyncRegistrar.
func (a asyncRegistrar) Begin(ctx context.Context, c skills.Caller, skill string) (string, error) {
	g := a.g
	if g.cfg.Server.PublicURL == "" {
		return "", fmt.Errorf("skill %s is async but server.public_url is not configured", skill)
	}
	if c.Origin == 0 {
		return "", fmt.Errorf("skill %s: async call without an originating message", skill)
	}
	nonce := make([]byte, asyncNonceBytes)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	token := g.signToken(nonce)
	now := g.now()
	_, err := store.InsertAsyncTask(ctx, g.pool, tokenHash(token), store.AsyncTask{
		Skill: skill, RunID: c.TraceID, InboundID: int64(c.Origin), UserID: c.UserID,
		ExpiresAt: now.Add(g.cfg.Skills.AsyncTimeout),
	}, now)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(g.cfg.Server.PublicURL, "/") + "/v1/async/" + token, nil
}

// Accepted implements skills.AsyncRegistrar: the task id of the 202 is
// recorded at once, so the callback can be held to it.
func (a asyncRegistrar) Accepted(ctx context.Context, callbackURL, taskID string) error {
	token, err := skills.CallbackToken(callbackURL)
	if err != nil {
		return err
	}
	return store.SetAsyncTaskID(ctx, a.g.pool, tokenHash(token), taskID)
}

// completeAsync handles a backend's result posted to a callback URL: the
// token must be ours, the body signed with the skill's key (when it has
// one), and each token works once. The result becomes a message to the chat
// the request came from, through the outbox, so it is delivered after a
// restart too.
func (g *Gateway) completeAsync(r *http.Request, token string) error {
	ctx := r.Context()
	if !g.verifyToken(token) {
		return ErrBadToken
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, skills.MaxCallbackBytes+1))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	task, err := store.AsyncTaskByToken(ctx, g.pool, tokenHash(token))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: unknown task", ErrBadToken)
	} else if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	cb, err := g.decodeCallback(r, token, task.Skill, body)
	if err != nil {
		return err
	}
	if task.Status == store.AsyncWaiting && task.TaskID != "" && cb.TaskID != task.TaskID {
		// A result for another task, posted to this call's URL.
		return fmt.Errorf("%w: callback reports task %q, the call was accepted as %q", ErrBadRequest, cb.TaskID, task.TaskID)
	}
	return store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
		task, err := store.CompleteAsyncTask(ctx, tx, tokenHash(token), cb.TaskID, g.now())
		switch {
		case errors.Is(err, store.ErrAsyncGone):
			return ErrGone
		case err != nil:
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		format := g.cfg.Messages.AsyncDone
		if cb.Status != skills.AsyncSucceeded {
			format = g.cfg.Messages.AsyncFailed
		}
		// Masked like every other result a user reads.
		return g.notifyOrigin(ctx, tx, task, fmt.Sprintf(format, agent.MaskedText(asyncResultText(cb))))
	})
}

// decodeCallback checks the backend's signature over the token and body
// with the skill's key, or only decodes it when the skill signs nothing (then the URL's
// secret token is the only proof).
func (g *Gateway) decodeCallback(r *http.Request, token, skill string, body []byte) (skills.AsyncCallback, error) {
	key, err := g.skills.Load().CallbackKey(skill)
	if err != nil {
		return skills.AsyncCallback{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if len(key) == 0 {
		cb, err := skills.DecodeCallback(body)
		if err != nil {
			return cb, fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		return cb, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	cb, err := skills.VerifyCallback(r, token, key, g.now(), 0)
	switch {
	case errors.Is(err, skills.ErrCallbackMalformed):
		return cb, fmt.Errorf("%w: %w", ErrBadRequest, err)
	case err != nil:
		return cb, fmt.Errorf("%w: %w", ErrBadToken, err)
	}
	return cb, nil
}

// asyncResultText is what the user reads of a backend's result: its
// message, else its result rendered compactly.
func asyncResultText(cb skills.AsyncCallback) string {
	if strings.TrimSpace(cb.Message) != "" {
		return strings.TrimSpace(cb.Message)
	}
	if len(cb.Result) > 0 {
		var v any
		if json.Unmarshal(cb.Result, &v) == nil {
			if s, ok := v.(string); ok {
				return s
			}
		}
		return string(cb.Result)
	}
	return cb.Status
}

// ExpireAsyncTasks tells the users of async tasks past their deadline that
// no result came. A periodic job runs it on the leader; each task once.
func (g *Gateway) ExpireAsyncTasks(ctx context.Context) (int, error) {
	n := 0
	err := store.InTx(ctx, g.pool, func(tx pgx.Tx) error {
		tasks, err := store.ExpireAsyncTasks(ctx, tx, g.now(), 100)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			if err := g.notifyOrigin(ctx, tx, t, fmt.Sprintf(g.cfg.Messages.AsyncLate, cmp.Or(t.TaskID, t.Skill))); err != nil {
				return err
			}
		}
		n = len(tasks)
		return nil
	})
	return n, err
}

// notifyOrigin queues text for the chat an async task came from.
func (g *Gateway) notifyOrigin(ctx context.Context, tx pgx.Tx, t store.AsyncTask, text string) error {
	origin, err := store.GetInbound(ctx, tx, t.InboundID)
	if err != nil {
		return err
	}
	ch, ok := g.channels[origin.In.Channel]
	if !ok {
		return fmt.Errorf("gateway: no channel %q for async task %d", origin.In.Channel, t.ID)
	}
	reply := replyFor(ch, origin.In, fmt.Sprintf("async:%d", t.ID), text)
	if _, err := store.InsertOutbox(ctx, tx, reply); err != nil {
		return err
	}
	return g.enqueueDelivery(ctx, tx, origin.In.Channel, origin.In.Account, reply.Key)
}

// ExpireAsyncArgs is the leader's periodic housekeeping: it times out
// unanswered async tasks and forgets expired single-use nonces.
type ExpireAsyncArgs struct{}

// Kind implements river.JobArgs.
func (ExpireAsyncArgs) Kind() string { return "hermes.expire_async" }

type expireAsyncWorker struct {
	river.WorkerDefaults[ExpireAsyncArgs]
	g *Gateway
}

func (w *expireAsyncWorker) Work(ctx context.Context, _ *river.Job[ExpireAsyncArgs]) error {
	n, err := w.g.ExpireAsyncTasks(ctx)
	if n > 0 {
		w.g.log.Info("async tasks timed out", "count", n)
	}
	return errors.Join(err, w.g.ForgetNonces(ctx))
}
