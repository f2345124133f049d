package router

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/capability"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// asyncPathPrefix is where async callbacks arrive; the rest of the path
// is the call's token.
const asyncPathPrefix = "/v1/async/"

// asyncExpiryInterval is how often unanswered async tasks are looked for.
const asyncExpiryInterval = 30 * time.Second

// errNotAttached is an async call before the router was attached.
var errNotAttached = errors.New("router: not attached to a gateway")

// Begin implements skills.AsyncRegistrar: it gives each async skill call
// its callback URL, recording the task first so that a result can never
// arrive for an unknown task.
func (r *Router) Begin(ctx context.Context, c skills.Caller, skill string) (string, error) {
	cfg := r.s.Config
	if cfg == nil {
		return "", errNotAttached
	}
	if cfg.Server.PublicURL == "" {
		return "", fmt.Errorf("skill %s is async but server.public_url is not configured", skill)
	}
	if c.Origin == 0 {
		return "", fmt.Errorf("skill %s: async call without an originating message", skill)
	}
	token, err := capability.New(cfg.Server.CallbackKey)
	if err != nil {
		return "", err
	}
	now := r.s.Now()
	_, err = store.InsertAsyncTask(ctx, r.s.Pool, capability.Hash(token), store.AsyncTask{
		Skill: skill, RunID: c.TraceID, InboundID: int64(c.Origin), UserID: c.UserID,
		ExpiresAt: now.Add(cfg.Skills.AsyncTimeout),
	}, now)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(cfg.Server.PublicURL, "/") + asyncPathPrefix + token, nil
}

// Accepted implements skills.AsyncRegistrar: the task id of the 202 is
// recorded at once, so the callback can be held to it.
func (r *Router) Accepted(ctx context.Context, callbackURL, taskID string) error {
	token, err := skills.CallbackToken(callbackURL)
	if err != nil {
		return err
	}
	return store.SetAsyncTaskID(ctx, r.s.Pool, capability.Hash(token), taskID)
}

// asyncCallback is POST /v1/async/:token: a skill backend's late result.
func (r *Router) asyncCallback(c *gin.Context) {
	if err := r.completeAsync(c.Request, c.Param("token")); err != nil {
		r.refuse(c, "async callback refused", err)
		return
	}
	c.Status(http.StatusOK)
}

// completeAsync handles a backend's result posted to a callback URL: the
// token must be ours, the body signed with the skill's key (when it has
// one), and each token works once. The result becomes a message to the chat
// the request came from, through the outbox, so it is delivered after a
// restart too.
func (r *Router) completeAsync(req *http.Request, token string) error {
	ctx := req.Context()
	if !capability.Valid(r.s.Config.Server.CallbackKey, token) {
		return ErrBadToken
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, skills.MaxCallbackBytes+1))
	if err != nil {
		return fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
	}
	task, err := store.AsyncTaskByToken(ctx, r.s.Pool, capability.Hash(token))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: unknown task", ErrBadToken)
	} else if err != nil {
		return fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
	}
	cb, err := r.decodeCallback(req, token, task.Skill, body)
	if err != nil {
		return err
	}
	if task.Status == store.AsyncWaiting && task.TaskID != "" && cb.TaskID != task.TaskID {
		// A result for another task, posted to this call's URL.
		return fmt.Errorf("%w: callback reports task %q, the call was accepted as %q", channels.ErrBadRequest, cb.TaskID, task.TaskID)
	}
	return store.InTx(ctx, r.s.Pool, func(tx pgx.Tx) error {
		task, err := store.CompleteAsyncTask(ctx, tx, capability.Hash(token), cb.TaskID, r.s.Now())
		switch {
		case errors.Is(err, store.ErrAsyncGone):
			return ErrGone
		case err != nil:
			return fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
		}
		format := r.s.Config.Messages.AsyncDone
		if cb.Status != skills.AsyncSucceeded {
			format = r.s.Config.Messages.AsyncFailed
		}
		// Masked like every other result a user reads.
		return r.notifyOrigin(ctx, tx, task, fmt.Sprintf(format, agent.MaskedText(asyncResultText(cb))))
	})
}

// decodeCallback checks the backend's signature over the token and body
// with the skill's key, or only decodes it when the skill signs nothing (then the URL's
// secret token is the only proof).
func (r *Router) decodeCallback(req *http.Request, token, skill string, body []byte) (skills.AsyncCallback, error) {
	key, err := r.s.Skills.Load().CallbackKey(skill)
	if err != nil {
		return skills.AsyncCallback{}, fmt.Errorf("%w: %w", channels.ErrUnavailable, err)
	}
	if len(key) == 0 {
		cb, err := skills.DecodeCallback(body)
		if err != nil {
			return cb, fmt.Errorf("%w: %w", channels.ErrBadRequest, err)
		}
		return cb, nil
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	cb, err := skills.VerifyCallback(req, token, key, r.s.Now(), 0)
	switch {
	case errors.Is(err, skills.ErrCallbackMalformed):
		return cb, fmt.Errorf("%w: %w", channels.ErrBadRequest, err)
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
// no result came, and returns how many. A periodic job runs it on the
// leader; each task once.
func (r *Router) ExpireAsyncTasks(ctx context.Context) (int, error) {
	n := 0
	err := store.InTx(ctx, r.s.Pool, func(tx pgx.Tx) error {
		tasks, err := store.ExpireAsyncTasks(ctx, tx, r.s.Now(), 100)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			if err := r.notifyOrigin(ctx, tx, t, fmt.Sprintf(r.s.Config.Messages.AsyncLate, cmp.Or(t.TaskID, t.Skill))); err != nil {
				return err
			}
		}
		n = len(tasks)
		return nil
	})
	return n, err
}

// notifyOrigin queues text for the chat an async task came from.
func (r *Router) notifyOrigin(ctx context.Context, tx pgx.Tx, t store.AsyncTask, text string) error {
	origin, err := store.GetInbound(ctx, tx, t.InboundID)
	if err != nil {
		return err
	}
	_, err = r.s.Outbox.Queue(ctx, tx, fmt.Sprintf("async:%d", t.ID), gateway.AddressOf(origin.In), text)
	return err
}

// ExpireAsyncArgs is the leader's periodic job that times out unanswered
// async tasks.
type ExpireAsyncArgs struct{}

// Kind implements river.JobArgs.
func (ExpireAsyncArgs) Kind() string { return "hermes.expire_async" }

type expireAsyncWorker struct {
	river.WorkerDefaults[ExpireAsyncArgs]
	r *Router
}

func (w *expireAsyncWorker) Work(ctx context.Context, _ *river.Job[ExpireAsyncArgs]) error {
	n, err := w.r.ExpireAsyncTasks(ctx)
	if n > 0 {
		w.r.s.Log.Info("async tasks timed out", "count", n)
	}
	return err
}
