package feishu

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/hermes-gw/hermes/channels"
)

// Defaults of the timings tests shorten.
const (
	// defaultStreamPoll is how often a streaming card reads the answer so
	// far; 2 updates a second reads as smooth typing and stays far under
	// CardUpdatesPerSecond.
	defaultStreamPoll = 500 * time.Millisecond
	// botInfoTimeout bounds the one bot-info call an event may wait for,
	// well inside CallbackDeadline.
	botInfoTimeout = time.Second
)

// App is one configured Feishu app: its event codec, its OpenAPI client and
// its streams. It is safe for concurrent use.
type App struct {
	cfg    AppSection
	window time.Duration // the HTTP events' timestamp window
	crypto *Crypto
	api    *api
	now    func() time.Time
	log    *slog.Logger
	env    channels.Env // counts recovered panics (CountPanic)

	bot botIdentity
	dir directory

	// Streaming cards.
	streamPoll time.Duration
	cardRate   *rate.Limiter // the app's CardKit budget on this replica

	ws wsTimings
}

func newApp(s AppSection, window time.Duration, tokens channels.TokenCache, env channels.Env) *App {
	now := env.Now
	if now == nil {
		now = time.Now
	}
	log := env.Logger
	if log == nil {
		log = slog.Default()
	}
	return &App{
		cfg:    s,
		window: window,
		crypto: NewCrypto(s.EncryptKey),
		api: &api{
			base: s.Domain, appID: s.AppID, appSecret: s.AppSecret, tokens: tokens,
			client: &http.Client{Timeout: httpTimeout},
		},
		now:        now,
		log:        log.With("channel", ChannelName, "account", s.Name),
		env:        env,
		dir:        directory{entries: map[string]dirEntry{}},
		streamPoll: defaultStreamPoll,
		cardRate:   rate.NewLimiter(rate.Every(time.Second/(AppCardUpdatesPerSecond-10)), 1),
		ws:         defaultWSTimings,
	}
}

// botIdentity is the bot's own open_id, fetched once: a group message
// mentions the bot when one of its mentions carries that open_id.
type botIdentity struct {
	mu     sync.Mutex
	openID string
}

// botOpenID returns the bot's open_id from /open-apis/bot/v3/info, fetched
// on first need and kept for the process's life (it never changes for an
// app). Concurrent callers wait for one call.
func (a *App) botOpenID(ctx context.Context) (string, error) {
	a.bot.mu.Lock()
	defer a.bot.mu.Unlock()
	if a.bot.openID != "" {
		return a.bot.openID, nil
	}
	ctx, cancel := context.WithTimeout(ctx, botInfoTimeout)
	defer cancel()
	var out struct {
		Bot struct {
			OpenID  string `json:"open_id"`
			AppName string `json:"app_name"`
		} `json:"bot"`
	}
	if err := a.api.call(ctx, "bot/v3/info", http.MethodGet, "/open-apis/bot/v3/info", nil, nil, &out); err != nil {
		return "", fmt.Errorf("feishu: app %q: bot info: %w", a.cfg.Name, err)
	}
	if out.Bot.OpenID == "" {
		return "", fmt.Errorf("feishu: app %q: bot info without open_id (is the bot capability enabled?)", a.cfg.Name)
	}
	a.bot.openID = out.Bot.OpenID
	return a.bot.openID, nil
}

// departmentsTTL is how long a user's departments are reused: access rules
// by department follow a move within this time.
const departmentsTTL = 10 * time.Minute

// directory caches users' departments for one app.
type directory struct {
	mu      sync.Mutex
	entries map[string]dirEntry
	warned  bool // the missing-scope warning was logged
}

type dirEntry struct {
	depts   []string
	expires time.Time
}

// departments looks up userID's department ids (contact/v3/users/:id,
// id type as configured). It runs from the worker, never in the ack path.
// A missing scope is logged once at error level, naming it.
func (a *App) departments(ctx context.Context, userID string) ([]string, error) {
	now := a.now()
	a.dir.mu.Lock()
	if e, ok := a.dir.entries[userID]; ok && now.Before(e.expires) {
		a.dir.mu.Unlock()
		return e.depts, nil
	}
	a.dir.mu.Unlock()

	var out struct {
		Data struct {
			User struct {
				DepartmentIDs *[]string `json:"department_ids"`
			} `json:"user"`
		} `json:"data"`
	}
	q := map[string][]string{"user_id_type": {a.cfg.IDType}, "department_id_type": {"open_department_id"}}
	err := a.api.call(ctx, "contact/v3/users", http.MethodGet, "/open-apis/contact/v3/users/"+pathEscape(userID), q, nil, &out)
	if err != nil {
		if e := apiErrorOf(err); e != nil && e.Code == 99991672 {
			a.log.Error("feishu: cannot read the address book: grant the scope contact:contact.base:readonly "+
				"(and contact:user.department:readonly) in 开发者后台 → 权限管理, then publish a version", "msg", e.Msg)
		}
		return nil, fmt.Errorf("feishu: app %q: departments of %q: %w", a.cfg.Name, userID, err)
	}
	if out.Data.User.DepartmentIDs == nil {
		a.dir.mu.Lock()
		warn := !a.dir.warned
		a.dir.warned = true
		a.dir.mu.Unlock()
		if warn {
			a.log.Error("feishu: users come without departments: grant the scope contact:user.department:readonly " +
				"(获取用户组织架构信息) in 开发者后台 → 权限管理, then publish a version")
		}
	}
	var depts []string
	if out.Data.User.DepartmentIDs != nil {
		depts = *out.Data.User.DepartmentIDs
	}
	a.dir.mu.Lock()
	a.dir.entries[userID] = dirEntry{depts: depts, expires: now.Add(departmentsTTL)}
	a.dir.mu.Unlock()
	return depts, nil
}
