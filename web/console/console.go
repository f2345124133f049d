package console

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/reports/schedule"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
	"github.com/hermes-gw/hermes/web"
)

// Prefix is where the console is mounted.
const Prefix = "/console"

// Roles of console accounts.
const (
	RoleAdmin  = "admin"  // everything, including reloading skills, the channel self-test, running or pausing reports, exporting conversations and runs, and exporting or deleting an employee's memories
	RoleViewer = "viewer" // reads every page (personal numbers masked), changes nothing
)

// Deps are what the console reads and may act on.
type Deps struct {
	// Store is the database as the console may use it (store.Console).
	Store Store
	// Skills returns the current skill registry.
	Skills func() *skills.Registry
	// CheckSkills runs `hermes skills check` over the configured skill
	// folder; ReloadSkills makes a new set current (refusing a broken one).
	CheckSkills  func() []skills.Finding
	ReloadSkills func() error
	// Channels are the gateway's channels; those that implement
	// channels.SelfTester are offered in the self-test.
	Channels []channels.Channel
	// RunReportNow queues a run of report id outside its schedule and
	// returns the run's id; PauseReport pauses (true) or resumes (false)
	// its schedule. Both act as the operator, on any owner's report.
	// Errors: store.ErrNotFound.
	RunReportNow func(ctx context.Context, id int64) (int64, error)
	PauseReport  func(ctx context.Context, id int64, paused bool) error
	// Texts override the interface text, by language and key
	// (messages.console); CheckTexts refuses an unknown one.
	Texts map[string]map[string]string
	// When says when a schedule fires (messages.reports.schedule).
	When schedule.Words
	// Costs are the models' prices (costs:) for the overview's estimate
	// of the model bill; a model without a price shows no cost.
	Costs config.CostsConfig
	// AlertRules are alerts.rules, for the alerts page.
	AlertRules []config.AlertRule
	// Knowledge is the knowledge base, for its page (nil: the page says
	// it is off).
	Knowledge KnowledgeBase
	Now       func() time.Time
	Logger    *slog.Logger
}

// Console serves the console's pages.
type Console struct {
	deps  Deps
	pages map[string]*template.Template
	mux   *http.ServeMux
	// verify checks a password against its bcrypt hash (tests count the
	// checks through it).
	verify func(hash, password []byte) error
	// texts are the interface text by language: the defaults with
	// Deps.Texts over them.
	texts map[string]map[string]string
	// memories are the employees' memories over Deps.Store, audited.
	memories memoryStore
	// privacy is everything held about an employee, over Deps.Store, audited.
	privacy privacyStore
}

//go:embed templates/*.html
var templateFS embed.FS

// pageNames are the templates/<name>.html files, each rendered inside
// templates/layout.html.
var pageNames = []string{"login", "overview", "conversations", "thread", "runs", "run", "skills", "selftest", "schedules", "schedule", "memories", "alerts", "knowledge"}

// pages are the parsed templates by page name (with the charts' blocks,
// templates/charts.html, that two pages use); like web's status page
// they are embedded, so a template that does not parse fails every start
// (and every test) at once.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/charts.html", "templates/"+name+".html"))
	}
	return out
}()

// static is web/static, served under /console/static/.
var static = func() fs.FS {
	sub, err := fs.Sub(web.Assets, "static")
	if err != nil {
		panic(err) // a constant path into an embedded folder
	}
	return sub
}()

// New builds the console.
func New(deps Deps) *Console {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.When.Daily == "" {
		deps.When = schedule.DefaultWords
	}
	c := &Console{deps: deps, pages: pages, mux: http.NewServeMux(), verify: bcrypt.CompareHashAndPassword,
		texts: withTexts(deps.Texts), memories: memoryStore{deps.Store}, privacy: privacyStore{deps.Store}}
	m := c.mux
	m.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)))
	m.HandleFunc("GET "+Prefix+"/login", c.loginPage)
	m.HandleFunc("POST "+Prefix+"/login", c.login)
	m.HandleFunc("GET "+Prefix+"/lang", c.setLanguage)
	m.Handle("POST "+Prefix+"/logout", c.signedIn(c.logout))
	m.Handle("GET "+Prefix+"/{$}", c.signedIn(c.overview))
	m.Handle("GET "+Prefix+"/conversations", c.signedIn(c.conversations))
	m.Handle("GET "+Prefix+"/conversations/{id}", c.signedIn(c.thread))
	m.Handle("GET "+Prefix+"/runs", c.signedIn(c.runs))
	m.Handle("GET "+Prefix+"/runs/{id}", c.signedIn(c.run))
	m.Handle("GET "+Prefix+"/skills", c.signedIn(c.skillsPage))
	m.Handle("GET "+Prefix+"/export.csv", c.signedIn(adminOnly(c.exportCSV)))
	m.Handle("POST "+Prefix+"/skills/reload", c.signedIn(adminOnly(c.reloadSkills)))
	m.Handle("GET "+Prefix+"/schedules", c.signedIn(c.schedules))
	m.Handle("GET "+Prefix+"/schedules/{id}", c.signedIn(c.schedule))
	m.Handle("POST "+Prefix+"/schedules/{id}/run", c.signedIn(adminOnly(c.runReportNow)))
	m.Handle("POST "+Prefix+"/schedules/{id}/pause", c.signedIn(adminOnly(c.pauseReport)))
	m.Handle("POST "+Prefix+"/schedules/{id}/resume", c.signedIn(adminOnly(c.resumeReport)))
	m.Handle("GET "+Prefix+"/memories", c.signedIn(c.memoriesPage))
	m.Handle("GET "+Prefix+"/memories/export", c.signedIn(adminOnly(c.exportMemories)))
	m.Handle("POST "+Prefix+"/memories/purge", c.signedIn(adminOnly(c.purgeMemories)))
	m.Handle("GET "+Prefix+"/privacy/export", c.signedIn(adminOnly(c.exportPerson)))
	m.Handle("POST "+Prefix+"/privacy/erase", c.signedIn(adminOnly(c.erasePerson)))
	m.Handle("GET "+Prefix+"/alerts", c.signedIn(c.alertsPage))
	m.Handle("POST "+Prefix+"/alerts/silence", c.signedIn(adminOnly(c.silenceAlert)))
	m.Handle("GET "+Prefix+"/knowledge", c.signedIn(c.knowledgePage))
	m.Handle("POST "+Prefix+"/knowledge/upload", c.boundedUpload(c.signedIn(adminOnly(c.uploadKnowledge))))
	m.Handle("POST "+Prefix+"/knowledge/{id}/delete", c.signedIn(adminOnly(c.deleteKnowledge)))
	m.Handle("POST "+Prefix+"/knowledge/{id}/reindex", c.signedIn(adminOnly(c.reindexKnowledge)))
	m.Handle("GET "+Prefix+"/selftest", c.signedIn(c.selfTestPage))
	m.Handle("POST "+Prefix+"/selftest", c.signedIn(adminOnly(c.selfTest)))
	return c
}

// ServeHTTP serves every console route; pages are never cached.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, Prefix+"/static/") {
		h.Set("Cache-Control", "no-store")
	}
	c.mux.ServeHTTP(w, r)
}

// request is one signed-in request: who and in which language.
type request struct {
	*http.Request
	session store.AdminSession
	lang    string
	t       map[string]string // the interface text of lang
}

// newRequest is r in its interface language.
func (c *Console) newRequest(r *http.Request) *request {
	lang := language(r)
	return &request{Request: r, lang: lang, t: c.texts[lang]}
}

// handler is a page for a signed-in operator.
type handler func(w http.ResponseWriter, r *request)

// page is what every template gets.
type page struct {
	T     map[string]string // interface text in the request's language
	Lang  string
	User  string
	Role  string
	CSRF  string
	Nav   string // the current section, for the menu
	Flash string
	Data  any
}

// render writes the page name with data, or only its block named
// fragment (an htmx swap) when fragment is not empty.
func (c *Console) render(w http.ResponseWriter, r *request, name, fragment string, status int, data any) {
	p := page{T: c.texts[r.lang], Lang: r.lang, User: r.session.Username, Role: r.session.Role, CSRF: r.session.CSRF, Nav: name, Data: data}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	tmpl := "layout.html"
	if fragment != "" {
		tmpl = fragment
	}
	if err := c.pages[name].ExecuteTemplate(w, tmpl, p); err != nil {
		c.deps.Logger.Error("console: render", "page", name, "err", err)
	}
}

// fail answers a request whose data could not be read: 404 for a missing
// row, 500 (logged, not shown) for anything else.
func (c *Console) fail(w http.ResponseWriter, r *request, err error) {
	if errors.Is(err, store.ErrNotFound) {
		http.Error(w, c.texts[r.lang]["not_found"], http.StatusNotFound)
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	c.deps.Logger.Error("console: read", "path", r.URL.Path, "err", err)
	http.Error(w, c.texts[r.lang]["internal_error"], http.StatusInternalServerError)
}

// adminOnly refuses viewers with 403.
func adminOnly(h handler) handler {
	return func(w http.ResponseWriter, r *request) {
		if r.session.Role != RoleAdmin {
			http.Error(w, r.t["admins_only"], http.StatusForbidden)
			return
		}
		h(w, r)
	}
}
