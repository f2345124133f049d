package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/knowledge"
	"github.com/hermes-gw/hermes/gateway/media/document"
)

// KnowledgeBase is the knowledge base as the console uses it
// (gateway/knowledge's Base).
type KnowledgeBase interface {
	List(ctx context.Context) ([]knowledge.Document, error)
	// Add errors: knowledge.ErrInvalid, knowledge.ErrUnreadable (and
	// media's document errors after it).
	Add(ctx context.Context, n knowledge.NewDocument) (knowledge.Added, error)
	Delete(ctx context.Context, id int64) (knowledge.Document, error)
	Reindex(ctx context.Context, id int64) (int, error)
	Gaps(ctx context.Context, since time.Time, limit int) ([]knowledge.Gap, error)
	NeverCited(ctx context.Context) ([]knowledge.Document, error)
	// MaxUpload is the largest document accepted (media.max_bytes).
	MaxUpload() int64
}

// Bounds of the knowledge page.
const (
	// gapsWindow is how far back the unanswered questions are counted.
	gapsWindow = 30 * 24 * time.Hour
	// gapsShown is how many unanswered questions the page lists.
	gapsShown = 50
	// formOverhead is what an upload's form may add to its file: the
	// fields and the multipart framing.
	formOverhead = 64 << 10
	// formMemory is how much of an upload is held in memory while it is
	// parsed; the rest goes to a temporary file.
	formMemory = 1 << 20
)

// refusals name, in the operator's language, why a document was refused:
// the first error of the chain that matches.
var refusals = []struct {
	err error
	key string
}{
	{document.ErrBomb, "kb_refused_bomb"},
	{document.ErrEncrypted, "kb_refused_encrypted"},
	{document.ErrUnsupported, "kb_refused_unsupported"},
	{document.ErrScanned, "kb_refused_empty"},
	{document.ErrEmpty, "kb_refused_empty"},
	{document.ErrCorrupt, "kb_refused_corrupt"},
	{document.ErrTooComplex, "kb_refused_corrupt"},
	{document.ErrTimeout, "kb_refused_corrupt"},
	{knowledge.ErrInvalid, "kb_refused_invalid"},
	{knowledge.ErrUnreadable, "kb_refused_unreadable"},
}

type knowledgeData struct {
	Enabled    bool
	Docs       []knowledgeRow
	Gaps       []knowledge.Gap
	NeverCited []knowledge.Document
	GapDays    int
	MaxMB      string
	Notice     string
	Error      string
}

type knowledgeRow struct {
	knowledge.Document
	Access []string // "departments: 9, 12"; empty: everyone in its corps
}

// knowledgePage lists the documents (admins: upload, delete, re-index),
// the questions the documents did not answer, most asked first, and the
// documents in force never cited.
func (c *Console) knowledgePage(w http.ResponseWriter, r *request) {
	c.renderKnowledge(w, r, http.StatusOK, "", "")
}

func (c *Console) renderKnowledge(w http.ResponseWriter, r *request, status int, notice, problem string) {
	kb := c.deps.Knowledge
	d := knowledgeData{Enabled: kb != nil, GapDays: int(gapsWindow.Hours() / 24), Notice: notice, Error: problem}
	if kb == nil {
		c.render(w, r, "knowledge", "", status, d)
		return
	}
	d.MaxMB = strconv.FormatFloat(float64(kb.MaxUpload())/(1<<20), 'f', -1, 64)
	docs, err := kb.List(r.Context())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, doc := range docs {
		d.Docs = append(d.Docs, knowledgeRow{Document: doc, Access: accessLines(doc.Audience)})
	}
	if d.Gaps, err = kb.Gaps(r.Context(), c.deps.Now().Add(-gapsWindow), gapsShown); err != nil {
		c.fail(w, r, err)
		return
	}
	for i := range d.Gaps {
		d.Gaps[i].Question = agent.MaskedText(d.Gaps[i].Question) // an employee's text, as on the memories page
	}
	if d.NeverCited, err = kb.NeverCited(r.Context()); err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, "knowledge", "", status, d)
}

func accessLines(a knowledge.Audience) []string {
	var out []string
	for _, rule := range []struct {
		name string
		list []string
	}{{"corps", a.Corps}, {"departments", a.Departments}, {"users", a.Users}, {"chats", a.Chats}} {
		if len(rule.list) > 0 {
			out = append(out, rule.name+": "+strings.Join(rule.list, ", "))
		}
	}
	return out
}

// boundedUpload refuses a request body larger than the knowledge base
// accepts before anything reads it (the CSRF check parses the form), and
// bounds what is read of a body that does not say its length.
func (c *Console) boundedUpload(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.deps.Knowledge == nil {
			http.NotFound(w, r)
			return
		}
		limit := c.deps.Knowledge.MaxUpload() + formOverhead
		if r.ContentLength > limit {
			t := c.texts[language(r)]
			http.Error(w, fmt.Sprintf(t["kb_refused_too_large"], float64(c.deps.Knowledge.MaxUpload())/(1<<20)), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if err := r.ParseMultipartForm(formMemory); err != nil {
			t := c.texts[language(r)]
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				http.Error(w, fmt.Sprintf(t["kb_refused_too_large"], float64(c.deps.Knowledge.MaxUpload())/(1<<20)), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, t["kb_bad_form"], http.StatusBadRequest)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// uploadKnowledge adds the uploaded document, recorded under the signed-in
// account; a refused one is named with its reason and changes nothing.
func (c *Console) uploadKnowledge(w http.ResponseWriter, r *request) {
	defer r.MultipartForm.RemoveAll()
	file, head, err := r.FormFile("file")
	if err != nil {
		c.renderKnowledge(w, r, http.StatusBadRequest, "", r.t["kb_no_file"])
		return
	}
	defer file.Close()
	name := filepath.Base(head.Filename)
	max := c.deps.Knowledge.MaxUpload()
	data, err := io.ReadAll(io.LimitReader(file, max+1))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	refuse := func(reason string) {
		c.renderKnowledge(w, r, http.StatusUnprocessableEntity, "", fmt.Sprintf(r.t["kb_refused"], name, reason))
	}
	if int64(len(data)) > max {
		refuse(fmt.Sprintf(r.t["kb_refused_too_large"], float64(max)/(1<<20)))
		return
	}
	n := knowledge.NewDocument{Name: name, Data: data, Title: strings.TrimSpace(r.PostFormValue("title")),
		Version: strings.TrimSpace(r.PostFormValue("version")), Owner: strings.TrimSpace(r.PostFormValue("owner")),
		Source: "console", AddedBy: r.session.Username,
		Audience: knowledge.Audience{Corps: list(r.PostFormValue("corps")), Departments: list(r.PostFormValue("departments")), Users: list(r.PostFormValue("users")),
			Chats: list(r.PostFormValue("chats"))}}
	if n.Title == "" {
		n.Title = strings.TrimSuffix(name, filepath.Ext(name))
	}
	if eff := strings.TrimSpace(r.PostFormValue("effective")); eff != "" {
		if n.Effective, err = time.Parse(time.DateOnly, eff); err != nil {
			refuse(r.t["kb_bad_effective"])
			return
		}
	}
	added, err := c.deps.Knowledge.Add(r.Context(), n)
	if err != nil {
		for _, rf := range refusals {
			if errors.Is(err, rf.err) {
				c.deps.Logger.Info("console: document refused", "admin", r.session.Username, "file", name, "err", err)
				refuse(r.t[rf.key])
				return
			}
		}
		c.fail(w, r, err)
		return
	}
	c.deps.Logger.Info("console: document added", "admin", r.session.Username, "id", added.Document.ID, "title", added.Document.Title,
		"unchanged", added.Unchanged)
	notice := fmt.Sprintf(r.t["kb_added"], added.Document.Title, added.Chunks)
	if added.Unchanged {
		notice = fmt.Sprintf(r.t["kb_unchanged"], added.Document.Title)
	}
	c.renderKnowledge(w, r, http.StatusOK, notice, "")
}

// list is a comma-separated form field (，too), without empty items.
func list(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '，' || r == ' ' })
}

// deleteKnowledge deletes a document with its passages and vectors.
func (c *Console) deleteKnowledge(w http.ResponseWriter, r *request) {
	c.knowledgeAction(w, r, func(ctx context.Context, id int64) (string, error) {
		d, err := c.deps.Knowledge.Delete(ctx, id)
		return fmt.Sprintf(r.t["kb_deleted"], d.Title), err
	})
}

// reindexKnowledge computes a document's terms and vectors again.
func (c *Console) reindexKnowledge(w http.ResponseWriter, r *request) {
	c.knowledgeAction(w, r, func(ctx context.Context, id int64) (string, error) {
		n, err := c.deps.Knowledge.Reindex(ctx, id)
		return fmt.Sprintf(r.t["kb_reindexed"], n), err
	})
}

func (c *Console) knowledgeAction(w http.ResponseWriter, r *request, act func(ctx context.Context, id int64) (string, error)) {
	if c.deps.Knowledge == nil {
		http.NotFound(w, r.Request)
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.NotFound(w, r.Request)
		return
	}
	notice, err := act(r.Context(), id)
	if errors.Is(err, knowledge.ErrNotFound) {
		http.Error(w, r.t["not_found"], http.StatusNotFound)
		return
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.deps.Logger.Info("console: knowledge "+r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:], "admin", r.session.Username, "id", id)
	c.renderKnowledge(w, r, http.StatusOK, notice, "")
}
