package gateway

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// doctorDialTimeout bounds each TCP connect of the doctor.
const doctorDialTimeout = 5 * time.Second

// Doctor checks a loaded configuration against the world, for `hermes
// doctor`: the database (reachable, migrated), the model endpoint, each
// channel's credentials and API (channels.Doctor), and each skill's
// endpoint. It changes nothing, sends no message and calls no skill: a
// skill endpoint is checked by a TCP connect to its host, because even a
// HEAD or OPTIONS reaches some backends' handlers and could count as a
// call. deps.Pool must be set; it may be a pool whose database is down.
func Doctor(ctx context.Context, cfg *config.Config, deps Deps) []channels.Check {
	out := []channels.Check{{Name: "config", OK: true, Detail: "loaded and valid"}}
	out = append(out, checkDatabase(ctx, deps)...)
	out = append(out, checkModel(ctx, cfg.Model))
	deps.Queues, deps.Partial = map[string]int{}, true // build only: work no queue
	g, err := New(ctx, cfg, deps)
	if err != nil {
		return append(out, channels.Check{Name: "channels and skills", Detail: err.Error(),
			Fix: "fix the key the message names, then run hermes doctor again"})
	}
	defer g.mcp.Close() //nolint:errcheck // nothing to save
	names := make([]string, 0, len(g.channels))
	for name := range g.channels {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if d, ok := g.channels[name].(channels.Doctor); ok {
			out = append(out, d.Check(ctx)...)
			continue
		}
		out = append(out, channels.Check{Name: name, OK: true, Detail: "configured; this platform has no self-check yet"})
	}
	for _, s := range g.skills.Load().Skills() {
		out = append(out, checkSkill(ctx, s, cfg.Skills.BaseURL))
	}
	return out
}

func checkDatabase(ctx context.Context, deps Deps) []channels.Check {
	db := channels.Check{Name: "database"}
	if err := deps.Pool.Ping(ctx); err != nil {
		db.Detail = "unreachable: " + err.Error()
		db.Fix = "database.url: check host, port, user and password (use ${ENV}); is Postgres running and reachable from here?"
		return []channels.Check{db}
	}
	db.OK, db.Detail = true, "reachable"
	mig := channels.Check{Name: "database: migrations"}
	switch pending, err := store.MigrationsPending(ctx, deps.Pool); {
	case err != nil:
		mig.Detail, mig.Fix = err.Error(), "run hermes migrate --config <file>"
	case pending:
		mig.Detail, mig.Fix = "migrations pending", "run hermes migrate --config <file> (hermes serve also migrates at start)"
	default:
		mig.OK, mig.Detail = true, "all applied"
	}
	return []channels.Check{db, mig}
}

// checkModel connects to the model endpoint's host (no model call: it
// would cost tokens).
func checkModel(ctx context.Context, cfg config.ModelConfig) channels.Check {
	ck := channels.Check{Name: "model endpoint"}
	if cfg.Provider == "offline" {
		ck.OK, ck.Detail = true, "offline demo model"
		return ck
	}
	if err := dialURL(ctx, cfg.BaseURL); err != nil {
		ck.Detail = err.Error()
		ck.Fix = "model.base_url: let this server reach it (firewall, proxy, DNS) or correct the URL"
		return ck
	}
	ck.OK, ck.Detail = true, "reachable: "+hostOf(cfg.BaseURL)
	return ck
}

// checkSkill checks that a skill's endpoint can be reached, or that its
// program exists and may be run.
func checkSkill(ctx context.Context, s *skills.Skill, baseURL string) channels.Check {
	ck := channels.Check{Name: "skill " + s.Name}
	program := ""
	switch {
	case s.Command != nil:
		program = s.Command.Path
	case s.MCP != nil && s.MCP.Command != "":
		program = s.MCP.Command
	}
	if program != "" {
		st, err := os.Stat(program)
		if err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			ck.Detail = fmt.Sprintf("program %s is missing or not executable", program)
			ck.Fix = "install it, or correct the skill's path in " + cmp.Or(s.File, "its SKILL.md")
			return ck
		}
		ck.OK, ck.Detail = true, "program "+program+" is executable"
		return ck
	}
	endpoint := s.Endpoint
	if strings.HasPrefix(endpoint, "/") {
		endpoint = strings.TrimSuffix(baseURL, "/") + endpoint
	}
	if err := dialURL(ctx, endpoint); err != nil {
		ck.Detail = err.Error()
		ck.Fix = "start the backend or let this server reach it; the endpoint comes from " + cmp.Or(s.File, "its SKILL.md") +
			" (and skills.base_url for paths)"
		return ck
	}
	ck.OK, ck.Detail = true, "reachable: "+hostOf(endpoint)+" (TCP connect; the skill was not called)"
	return ck
}

// dialURL connects to the host and port of an http(s) URL.
func dialURL(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", raw)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	d := net.Dialer{Timeout: doctorDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return fmt.Errorf("%s unreachable: %w", u.Host, err)
	}
	return conn.Close()
}

// hostOf is the host:port of a URL, for details without paths or queries.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}
