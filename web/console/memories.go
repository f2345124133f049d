package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/memory"
)

// memoriesData is the memories page: the lookup form and, once a user is
// given, their memories.
type memoriesData struct {
	CorpID, UserID string
	// Looked: a user was given and List is all of their unexpired
	// memories (maybe none).
	Looked  bool
	List    []memoryRow
	Error   string
	Deleted string // what the purge just done deleted, after its redirect
	Erased  string // what the erasure just done changed, after its redirect
}

// memoryRow is one memory as the page shows it.
type memoryRow struct {
	N         int    // its number in the user's /memory
	Kind      string // in words
	Text      string // mobile and ID numbers masked, as in a trace
	CreatedAt time.Time
	UsedAt    *time.Time
	ExpiresAt time.Time
}

// memoryOwner is the employee a request names (fields corp and user, read
// by get); ok is false without a user id. An empty corp id is a corp of
// its own (an API key configured without one), as in gateway/memory, so it
// is looked up as given.
func memoryOwner(get func(string) string) (o memory.Owner, ok bool) {
	o = memory.Owner{CorpID: strings.TrimSpace(get("corp")), UserID: strings.TrimSpace(get("user"))}
	return o, o.UserID != ""
}

// memoriesPage looks up one employee's memories. Showing them is access to
// personal data, so each lookup writes an audit row (action list, the
// signed-in account, how many were shown); the bare form shows nothing
// and writes nothing.
func (c *Console) memoriesPage(w http.ResponseWriter, r *request) {
	q := r.URL.Query()
	o, ok := memoryOwner(q.Get)
	d := memoriesData{CorpID: o.CorpID, UserID: o.UserID}
	if !ok {
		status := http.StatusOK
		if o.CorpID != "" { // a corp without a user: say what is missing
			d.Error, status = r.t["memories_fill_in"], http.StatusBadRequest
		}
		c.render(w, r, "memories", "", status, d)
		return
	}
	ms, err := c.memories.list(r.Context(), r.session.Username, o, c.deps.Now())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d.Looked = true
	for i, m := range ms {
		d.List = append(d.List, memoryRow{N: i + 1, Kind: kindText(r.t, m.Kind), Text: agent.MaskedText(m.Text),
			CreatedAt: m.CreatedAt, UsedAt: m.UsedAt, ExpiresAt: m.ExpiresAt})
	}
	if n, err := strconv.ParseInt(q.Get("deleted"), 10, 64); err == nil && n >= 0 {
		d.Deleted = fmt.Sprintf(r.t["memories_deleted"], n)
	}
	if n, err := strconv.ParseInt(q.Get("erased"), 10, 64); err == nil && n >= 0 {
		d.Erased = fmt.Sprintf(r.t["privacy_erased"], n)
	}
	c.render(w, r, "memories", "", http.StatusOK, d)
}

// kindText is a memory's kind in the words of t; an unknown kind shows as
// its word.
func kindText(t map[string]string, k memory.Kind) string {
	if s, ok := t["memory_kind_"+string(k)]; ok {
		return s
	}
	return string(k)
}

// exportMemories downloads every memory of one employee as JSON, for their
// data request, texts whole (the only place the console shows them
// unmasked, hence admins only); audited as export.
func (c *Console) exportMemories(w http.ResponseWriter, r *request) {
	o, ok := memoryOwner(r.URL.Query().Get)
	if !ok {
		http.Error(w, r.t["memories_fill_in"], http.StatusBadRequest)
		return
	}
	out, err := c.memories.export(r.Context(), r.session.Username, o, c.deps.Now())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if c.downloadJSON(w, r, exportName("memories", o), out) {
		c.deps.Logger.Info("console: memories exported", "admin", r.session.Username, "corp", o.CorpID, "user", o.UserID, "count", len(out))
	}
}

// downloadJSON answers v as an indented JSON download named name; false
// (and the error page) when v does not encode.
func (c *Console) downloadJSON(w http.ResponseWriter, r *request, name string, v any) bool {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		c.fail(w, r, err)
		return false
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	_, _ = b.WriteTo(w)
	return true
}

// exportName is the download's file name: what it holds, then the owner's
// ids with anything but letters, digits and ._- replaced, so that no id
// can shape the header.
func exportName(what string, o memory.Owner) string {
	safe := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r < 0x80 && (r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
				return r
			}
			return '_'
		}, s)
	}
	name := what
	if o.CorpID != "" {
		name += "-" + safe(o.CorpID)
	}
	return name + "-" + safe(o.UserID) + ".json"
}

// purgeMemories deletes every memory of one employee (expired ones not yet
// purged included), audited as purge with the count, and goes back to the
// lookup, which shows none.
func (c *Console) purgeMemories(w http.ResponseWriter, r *request) {
	o, ok := memoryOwner(r.PostFormValue)
	if !ok {
		http.Error(w, r.t["memories_fill_in"], http.StatusBadRequest)
		return
	}
	n, err := c.memories.purge(r.Context(), r.session.Username, o, c.deps.Now())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.deps.Logger.Info("console: memories purged", "admin", r.session.Username, "corp", o.CorpID, "user", o.UserID, "count", n)
	back := url.Values{"corp": {o.CorpID}, "user": {o.UserID}, "deleted": {strconv.FormatInt(n, 10)}}
	http.Redirect(w, r.Request, Prefix+"/memories?"+back.Encode(), http.StatusSeeOther)
}
