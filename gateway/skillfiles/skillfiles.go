// Package skillfiles hands skills that take files (files: true in
// SKILL.md) the employee's attachments: for each call, one URL per
// attachment of the message the call serves, minted by Hermes, good for
// that file and that call until media.file_url_ttl. The platform's own URL
// or token never leaves Hermes. A backend GETs the URL under
// server.public_url; the token is checked against its signature before
// the database is asked (gateway/capability).
package skillfiles

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/riverqueue/river"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/capability"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// pathPrefix is where file URLs are served; the rest is the token.
const pathPrefix = "/v1/files/"

// sweepInterval is how often the leader forgets expired URLs.
const sweepInterval = time.Hour

var (
	errNotAttached = errors.New("skillfiles: not attached to a gateway")
	// errNotTheSender is a call whose message is not its caller's: never
	// hand one employee's file to a call made for another.
	errNotTheSender = errors.New("skillfiles: the message is not the caller's")
)

// Service issues and serves the file URLs of one gateway.
type Service struct{ s gateway.Services }

var (
	_ gateway.RouteFeature = (*Service)(nil)
	_ gateway.JobFeature   = (*Service)(nil)
	_ gateway.FileFeature  = (*Service)(nil)
)

// New is a service to attach to a gateway.
func New() *Service { return &Service{} }

// Attach implements gateway.Feature.
func (f *Service) Attach(s gateway.Services) error {
	f.s = s
	return nil
}

// Routes implements gateway.RouteFeature: file URLs are public, for skill
// backends.
func (f *Service) Routes(public, _ gin.IRouter) {
	public.GET(pathPrefix+":token", f.serve)
}

// Files implements skills.FileIssuer: a URL for each held attachment of
// the message c's call serves, in the message's order, after checking the
// message is c's own (same sender, channel, account and chat).
func (f *Service) Files(ctx context.Context, c skills.Caller, skill string) ([]string, error) {
	cfg := f.s.Config
	if cfg == nil {
		return nil, errNotAttached
	}
	origin := int64(c.FilesMessage())
	if origin == 0 {
		return nil, nil // a report or an API call: no message, no files
	}
	if cfg.Server.PublicURL == "" {
		return nil, fmt.Errorf("skill %s takes files but server.public_url is not configured", skill)
	}
	row, err := store.GetInbound(ctx, f.s.Pool, origin)
	if err != nil {
		return nil, err
	}
	if in := row.In; in.Sender.UserID != c.UserID || in.Channel != c.Channel || in.Account != c.Account || in.ChatID != c.ChatID {
		return nil, fmt.Errorf("%w (inbound %d, skill %s)", errNotTheSender, origin, skill)
	}
	parts, err := store.FetchedParts(ctx, f.s.Pool, origin)
	if err != nil {
		return nil, err
	}
	now := f.s.Now()
	base := strings.TrimSuffix(cfg.Server.PublicURL, "/") + pathPrefix
	urls := make([]string, 0, len(parts))
	for _, part := range parts {
		token, err := capability.New(cfg.Server.CallbackKey)
		if err != nil {
			return nil, err
		}
		if err := store.InsertSkillFile(ctx, f.s.Pool, capability.Hash(token), store.SkillFile{
			InboundID: origin, Part: part, Skill: skill, RunID: c.TraceID, UserID: c.UserID,
			ExpiresAt: now.Add(cfg.Media.FileURLTTL),
		}, now); err != nil {
			return nil, err
		}
		urls = append(urls, base+token)
	}
	return urls, nil
}

// serve is GET /v1/files/:token: 200 with the attachment's bytes, 404 for
// a token that is not ours, 410 once it expired or its bytes were purged
// (media.retention). Nothing about the file is said to a wrong token.
func (f *Service) serve(c *gin.Context) {
	token := c.Param("token")
	if !capability.Valid(f.s.Config.Server.CallbackKey, token) {
		f.refuse(c, http.StatusNotFound, "forged token")
		return
	}
	file, err := store.OpenSkillFile(c.Request.Context(), f.s.Pool, capability.Hash(token))
	switch {
	case errors.Is(err, store.ErrNotFound):
		f.refuse(c, http.StatusNotFound, "unknown token")
		return
	case err != nil:
		f.s.Log.Error("skill file unreadable", "err", err)
		c.Status(http.StatusServiceUnavailable)
		return
	case !f.s.Now().Before(file.ExpiresAt):
		f.refuse(c, http.StatusGone, "expired")
		return
	case file.Data == nil:
		f.refuse(c, http.StatusGone, "purged after media.retention")
		return
	}
	typ, ext := servedType(file.MIME)
	name := cmp.Or(channels.CleanFileName(file.Name), defaultName+ext)
	h := c.Writer.Header()
	h.Set("Content-Length", strconv.Itoa(len(file.Data)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", fileCSP)
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	c.Data(http.StatusOK, typ, file.Data)
}

// The URLs are served on server.public_url, which is the console's origin
// when server.admin_listen is unset: an employee's file must never run
// there. Every file is a download (attachment, even without a name),
// typed only as one of passiveTypes, never sniffed (nosniff), and a
// browser that renders it anyway renders it sandboxed: no script, no
// origin of its own.
const (
	fileCSP     = "sandbox; default-src 'none'"
	defaultName = "attachment"
)

// passiveTypes are the sniffed types (http.DetectContentType) a file is
// served as, with the extension of a file without a name; any other type
// (HTML, XML, SVG, script, anything a browser might run) is served as
// application/octet-stream.
var passiveTypes = map[string]string{
	"image/png":                 ".png",
	"image/jpeg":                ".jpg",
	"image/gif":                 ".gif",
	"image/webp":                ".webp",
	"application/pdf":           ".pdf",
	"application/zip":           ".zip",
	"text/plain; charset=utf-8": ".txt",
	"audio/mpeg":                ".mp3",
	"audio/wave":                ".wav",
	"application/ogg":           ".ogg",
}

// servedType is the Content-Type a file sniffed as sniffed is served
// with, and the extension of its default name.
func servedType(sniffed string) (typ, ext string) {
	if ext, ok := passiveTypes[sniffed]; ok {
		return sniffed, ext
	}
	return "application/octet-stream", ".bin"
}

// refuse answers status, logging why without the token (until it
// expires, a token is a live credential for an employee's file).
func (f *Service) refuse(c *gin.Context, status int, why string) {
	f.s.Log.Info("skill file refused", "status", status, "why", why, "remote", c.ClientIP())
	c.Status(status)
}

// AddWorkers implements gateway.JobFeature.
func (f *Service) AddWorkers(w *river.Workers) {
	river.AddWorker(w, &sweepWorker{f: f})
}

// PeriodicJobs implements gateway.JobFeature: the leader forgets expired
// URLs.
func (f *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{gateway.LeaderJob(sweepInterval, SweepArgs{})}
}

// SweepArgs is the periodic sweep of expired file URLs.
type SweepArgs struct{}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "hermes.sweep_skill_files" }

type sweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	f *Service
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	_, err := store.SweepSkillFiles(ctx, w.f.s.Pool, w.f.s.Now())
	return err
}
