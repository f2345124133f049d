package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/hermes-gw/hermes/gateway/store"
)

// Sessions and passwords.
const (
	sessionCookie = "hermes_console"
	// loginCSRFCookie carries the login form's double-submit token: there
	// is no session yet to keep it in.
	loginCSRFCookie = "hermes_login_csrf"
	langCookie      = "hermes_lang"
	// SessionTTL is how long a login lasts.
	SessionTTL = 12 * time.Hour
	// MinPasswordLen is the shortest password an account may have.
	MinPasswordLen = 10
	// bcrypt reads at most 72 bytes of a password; longer ones are refused
	// rather than silently cut.
	maxPasswordLen = 72
)

// Bootstrap environment: the first admin account when none exists.
const (
	EnvBootstrapUser     = "HERMES_ADMIN_BOOTSTRAP_USER"
	EnvBootstrapPassword = "HERMES_ADMIN_BOOTSTRAP_PASSWORD"
)

var usernameRE = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

// ErrInvalidAccount is returned for a username, role or password that
// cannot make an account.
var ErrInvalidAccount = errors.New("invalid console account")

// CreateAdmin stores a console account with a bcrypt hash of password.
// Errors wrap ErrInvalidAccount (bad name, role or password) or
// store.ErrExists.
func CreateAdmin(ctx context.Context, q store.Querier, username, password, role string) error {
	switch {
	case !usernameRE.MatchString(username):
		return fmt.Errorf("user %q: letters, digits and _.@- only, at most 64: %w", username, ErrInvalidAccount)
	case role != RoleAdmin && role != RoleViewer:
		return fmt.Errorf("role %q: want %s or %s: %w", role, RoleAdmin, RoleViewer, ErrInvalidAccount)
	case len(password) < MinPasswordLen || len(password) > maxPasswordLen:
		return fmt.Errorf("password: %d to %d bytes: %w", MinPasswordLen, maxPasswordLen, ErrInvalidAccount)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("console: hash password: %w", err)
	}
	return store.CreateAdmin(ctx, q, store.Admin{Username: username, PasswordHash: hash, Role: role})
}

// Bootstrap creates the admin account named by HERMES_ADMIN_BOOTSTRAP_USER
// with HERMES_ADMIN_BOOTSTRAP_PASSWORD when the variable is set and no
// console account exists yet; otherwise it does nothing.
func Bootstrap(ctx context.Context, q store.Querier, lookup func(string) (string, bool), log *slog.Logger) error {
	user, ok := lookup(EnvBootstrapUser)
	if !ok || user == "" {
		return nil
	}
	n, err := store.CountAdmins(ctx, q)
	if err != nil || n > 0 {
		return err
	}
	password, _ := lookup(EnvBootstrapPassword)
	if err := CreateAdmin(ctx, q, user, password, RoleAdmin); err != nil {
		return fmt.Errorf("%s/%s: %w", EnvBootstrapUser, EnvBootstrapPassword, err)
	}
	log.Info("console: first admin account created from the environment", "user", user)
	return nil
}

// signedIn runs h for a request with a live session. Without one, a page
// request is sent to the login page and anything else gets 401. A POST
// must carry the session's CSRF token (form field csrf or the X-CSRF-Token
// header htmx sends), else 403.
func (c *Console) signedIn(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := c.newRequest(r)
		cookie, err := r.Cookie(sessionCookie)
		if err == nil {
			req.session, err = c.deps.Store.GetAdminSession(r.Context(), tokenHash(cookie.Value), c.deps.Now())
		}
		if err != nil {
			if !errors.Is(err, http.ErrNoCookie) && !errors.Is(err, store.ErrNotFound) {
				c.fail(w, req, err)
				return
			}
			if r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" {
				http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
				return
			}
			http.Error(w, c.texts[req.lang]["sign_in_first"], http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost {
			sent := r.Header.Get("X-CSRF-Token")
			if sent == "" {
				sent = r.PostFormValue("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(sent), []byte(req.session.CSRF)) != 1 {
				http.Error(w, c.texts[req.lang]["csrf_failed"], http.StatusForbidden)
				return
			}
		}
		h(w, req)
	})
}

// loginData is what the login page shows.
type loginData struct {
	Username string
	Error    string
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	req := c.newRequest(r)
	req.session.CSRF = randomToken()
	http.SetCookie(w, &http.Cookie{Name: loginCSRFCookie, Value: req.session.CSRF, Path: Prefix + "/login",
		HttpOnly: true, Secure: overTLS(r), SameSite: http.SameSiteStrictMode})
	c.render(w, req, "login", "", http.StatusOK, loginData{})
}

// login checks a username and password and starts a session. The attempt
// is counted before the password is looked at (throttle.go); one that
// comes too soon after failures answers 429 with Retry-After, a wrong
// password 401.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	req := c.newRequest(r)
	ctx, now := r.Context(), c.deps.Now()
	if cookie, err := r.Cookie(loginCSRFCookie); err != nil ||
		subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(r.PostFormValue("csrf"))) != 1 {
		http.Error(w, c.texts[req.lang]["csrf_failed"], http.StatusForbidden)
		return
	}
	req.session.CSRF = r.PostFormValue("csrf") // the form shown again keeps working
	user, password := strings.TrimSpace(r.PostFormValue("username")), r.PostFormValue("password")
	addr := clientAddr(r)
	keys, pair := loginKeys(addr, user)
	wait, err := c.beginAttempt(ctx, keys, now)
	if err != nil {
		c.fail(w, req, err)
		return
	}
	if wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
		c.render(w, req, "login", "", http.StatusTooManyRequests, loginData{Username: user,
			Error: fmt.Sprintf(c.texts[req.lang]["too_many_logins"], waitText(req.t, wait))})
		return
	}
	admin, err := store.Admin{}, store.ErrNotFound
	if pair != nil { // else the name cannot be an account
		admin, err = c.deps.Store.GetAdmin(ctx, user)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		c.fail(w, req, err)
		return
	}
	// An unknown name costs a bcrypt check too, so the answer's time does
	// not tell which accounts exist.
	hash := admin.PasswordHash
	if err != nil {
		hash = unknownUserHash()
	}
	if c.verify(hash, []byte(password)) != nil || err != nil {
		c.deps.Logger.Warn("console: failed login", "user", user, "addr", addr)
		c.render(w, req, "login", "", http.StatusUnauthorized, loginData{Username: user, Error: c.texts[req.lang]["wrong_password"]})
		return
	}
	if err := c.deps.Store.LoginSucceeded(ctx, keys, *pair, now); err != nil {
		c.fail(w, req, err)
		return
	}
	token, csrf := randomToken(), randomToken()
	if err := c.deps.Store.InsertAdminSession(ctx, tokenHash(token), admin.Username, csrf, now, now.Add(SessionTTL)); err != nil {
		c.fail(w, req, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: token, Path: Prefix, MaxAge: int(SessionTTL.Seconds()),
		HttpOnly: true, Secure: overTLS(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// unknownUserHash is a bcrypt hash no password matches, checked for names
// that are no account.
var unknownUserHash = sync.OnceValue(func() []byte {
	h, err := bcrypt.GenerateFromPassword([]byte(randomToken()[:maxPasswordLen/2]), bcrypt.DefaultCost)
	if err != nil {
		panic(err) // only for a cost out of range
	}
	return h
})

func (c *Console) logout(w http.ResponseWriter, r *request) {
	if cookie, err := r.Cookie(sessionCookie); err == nil {
		if err := c.deps.Store.DeleteAdminSession(r.Context(), tokenHash(cookie.Value), c.deps.Now()); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: overTLS(r.Request), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r.Request, Prefix+"/login", http.StatusSeeOther)
}

// setLanguage remembers the interface language (zh or en) and goes back to
// the console's start page.
func (c *Console) setLanguage(w http.ResponseWriter, r *http.Request) {
	lang := r.URL.Query().Get("to")
	if _, ok := c.texts[lang]; !ok {
		lang = defaultLang
	}
	http.SetCookie(w, &http.Cookie{Name: langCookie, Value: lang, Path: Prefix, MaxAge: 365 * 24 * 3600,
		Secure: overTLS(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// language is the request's interface language, Chinese unless chosen.
func language(r *http.Request) string {
	if c, err := r.Cookie(langCookie); err == nil {
		if _, ok := texts[c.Value]; ok {
			return c.Value
		}
	}
	return defaultLang
}

// overTLS reports a request that reached us (or the proxy in front) over
// HTTPS: only then is the cookie marked Secure, so plain-HTTP test setups
// still work.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// randomToken is 256 random bits, URL-safe.
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// tokenHash is what the database keeps of a session token.
func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}
