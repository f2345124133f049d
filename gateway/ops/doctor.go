package ops

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// The checks of `hermes doctor`, each against the world as a configuration
// names it. They change nothing, send no message and call no skill: a
// skill endpoint is checked by a TCP connect to its host, because even a
// HEAD or OPTIONS reaches some backends' handlers and could count as a
// call.

// doctorDialTimeout bounds each TCP connect of the doctor.
const doctorDialTimeout = 5 * time.Second

// CheckDatabase checks that pool's database answers and has every
// migration applied; pool may be one whose database is down.
func CheckDatabase(ctx context.Context, pool *pgxpool.Pool) []channels.Check {
	db := channels.Check{Name: "database"}
	if err := pool.Ping(ctx); err != nil {
		db.Detail = "unreachable: " + err.Error()
		db.Fix = "database.url: check host, port, user and password (use ${ENV}); is Postgres running and reachable from here?"
		return []channels.Check{db}
	}
	db.OK, db.Detail = true, "reachable"
	mig := channels.Check{Name: "database: migrations"}
	switch pending, err := store.MigrationsPending(ctx, pool); {
	case err != nil:
		mig.Detail, mig.Fix = err.Error(), "run hermes migrate --config <file>"
	case pending:
		mig.Detail, mig.Fix = "migrations pending", "run hermes migrate --config <file> (hermes serve also migrates at start)"
	default:
		mig.OK, mig.Detail = true, "all applied"
	}
	return []channels.Check{db, mig}
}

// cardsSilentAfter is how many answered cards without a single tap make
// the doctor say taps do not arrive: one or two people may just prefer
// typing.
const cardsSilentAfter = 5

// cardTapsFix says, per channel, where taps that never arrive are set up.
var cardTapsFix = map[string]string{
	"feishu": "subscribe the card callback (事件与回调 → 回调配置 → 卡片回传交互 card.action.trigger, " +
		"same mode as the events, then publish a version)",
	"wecom": "set the app's receive-message URL to its Hermes callback (应用管理 → the app → 接收消息 → 设置API接收)",
}

// CheckCards looks at the cards each account sent in the last 14 days:
// when at least cardsSilentAfter were answered (typed, or left to
// expire) and none was tapped, taps most likely never reach Hermes (on
// Feishu every tap then shows error 200340). Nothing to say (no check)
// when no account sent cards or the database cannot be read.
func CheckCards(ctx context.Context, pool *pgxpool.Pool, now time.Time) []channels.Check {
	taps, err := store.CountCardTaps(ctx, pool, now.Add(-14*24*time.Hour))
	if err != nil {
		return nil
	}
	var out []channels.Check
	for _, t := range taps {
		ck := channels.Check{Name: t.Channel + "/" + t.Account + ": card taps"}
		ck.Detail = fmt.Sprintf("%d cards sent in 14 days, %d answered, %d by a tap", t.Sent, t.Answered, t.Tapped)
		ck.OK = t.Tapped > 0 || t.Answered < cardsSilentAfter
		if !ck.OK {
			ck.Fix = "taps do not arrive: " + cmp.Or(cardTapsFix[t.Channel], "check the platform's card callback setup") + ", or turn cards off for the account"
		}
		out = append(out, ck)
	}
	return out
}

// CheckModel connects to the model endpoint's host (no model call: it
// would cost tokens).
func CheckModel(ctx context.Context, cfg config.ModelConfig) channels.Check {
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

// CheckChannels asks each channel that checks itself (channels.Doctor)
// for its findings, in the order given.
func CheckChannels(ctx context.Context, list []channels.Channel) []channels.Check {
	var out []channels.Check
	for _, ch := range list {
		if d, ok := ch.(channels.Doctor); ok {
			out = append(out, d.Check(ctx)...)
			continue
		}
		out = append(out, channels.Check{Name: ch.Name(), OK: true, Detail: "configured; this platform has no self-check yet"})
	}
	return out
}

// CheckSkills checks that each skill's endpoint can be reached (paths
// under baseURL, skills.base_url), or that its program exists and may be
// run.
func CheckSkills(ctx context.Context, reg *skills.Registry, baseURL string) []channels.Check {
	var out []channels.Check
	for _, s := range reg.Skills() {
		out = append(out, checkSkill(ctx, s, baseURL))
	}
	return out
}

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
