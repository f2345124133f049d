package router

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/ratelimit"
)

// Errors of an async callback, mapped to their HTTP status by
// channels.HTTPStatus.
var (
	// ErrBadToken is an async callback whose token is malformed or not ours.
	ErrBadToken = fmt.Errorf("router: invalid callback token: %w", channels.ErrUnauthorized)
	// ErrGone is a callback for a task already completed or timed out.
	ErrGone = fmt.Errorf("router: callback already used or expired: %w", channels.ErrGone)
)

// Router is the tool router and the async callbacks of one gateway. Make
// one per gateway with New.
type Router struct {
	s   gateway.Services
	use ratelimit.PerKey // /v1/route requests per router key, this replica
}

var (
	_ gateway.RouteFeature = (*Router)(nil)
	_ gateway.JobFeature   = (*Router)(nil)
	_ gateway.AsyncFeature = (*Router)(nil)
)

// New is a router to attach to a gateway.
func New() *Router { return &Router{} }

// Attach implements gateway.Feature.
func (r *Router) Attach(s gateway.Services) error {
	r.s = s
	return nil
}

// Routes implements gateway.RouteFeature: both are public, for other
// systems and skill backends.
func (r *Router) Routes(public, _ gin.IRouter) {
	public.POST("/v1/async/:token", r.asyncCallback)
	public.POST("/v1/route", r.route)
}

// AddWorkers implements gateway.JobFeature.
func (r *Router) AddWorkers(w *river.Workers) {
	river.AddWorker(w, &expireAsyncWorker{r: r})
}

// PeriodicJobs implements gateway.JobFeature: the leader times out async
// tasks that never got an answer.
func (r *Router) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{gateway.LeaderJob(asyncExpiryInterval, ExpireAsyncArgs{})}
}

// refuse logs a refused request once, under its own message, and answers
// its mapped status. The path is logged with its async token hidden: until
// it is used, a token is a live credential for posting a result into
// someone's chat.
func (r *Router) refuse(c *gin.Context, msg string, err error) {
	status := channels.HTTPStatus(err)
	r.s.Log.Warn(msg, "path", redactPath(c.Request.URL.Path), "status", status, "err", err)
	c.String(status, http.StatusText(status))
}

// redactPath hides the token of an async callback path.
func redactPath(path string) string {
	if strings.HasPrefix(path, asyncPathPrefix) {
		return asyncPathPrefix + "[REDACTED]"
	}
	return path
}
