package console

import (
	"encoding/csv"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/gateway/store"
)

// The export of a range of days to CSV: the conversations' messages or
// the runs, for admins. Rows are streamed as the database returns them;
// text is masked as the trace masks it (mobile and ID numbers); a cell
// that a spreadsheet would take for a formula is quoted.

// Export bounds: a month of days and a number of rows a spreadsheet opens.
const (
	exportMaxDays = 31
	exportMaxRows = 100_000
	// exportFlushRows is how often the stream is flushed to the client.
	exportFlushRows = 1000
)

// errExportFull stops an export at exportMaxRows.
var errExportFull = errors.New("console: export: row limit reached")

// exportKinds are what may be exported: the file's columns and how its
// rows are written.
var exportKinds = map[string]struct {
	header []string
	write  func(c *Console, r *request, since, until time.Time, limit int, row func([]string) error) error
}{
	"conversations": {
		header: []string{"time", "session_id", "channel", "account", "chat_id", "user_id", "role", "content", "run_id"},
		write: func(c *Console, r *request, since, until time.Time, limit int, row func([]string) error) error {
			return c.deps.Store.ExportMessages(r.Context(), since, until, limit, func(m store.ExportMessage) error {
				return row([]string{m.At.Local().Format(time.RFC3339), strconv.FormatInt(m.SessionID, 10), m.Channel, m.Account,
					m.ChatID, m.UserID, m.Role, agent.MaskedText(m.Content), m.RunID})
			})
		},
	},
	"runs": {
		header: []string{"run_id", "started", "finished", "channel", "account", "chat_id", "user_id", "model", "stop_reason",
			"prompt_tokens", "completion_tokens", "error", "text", "reply"},
		write: func(c *Console, r *request, since, until time.Time, limit int, row func([]string) error) error {
			return c.deps.Store.ExportRuns(r.Context(), since, until, limit, func(x store.ExportRun) error {
				return row([]string{x.ID, x.StartedAt.Local().Format(time.RFC3339), x.FinishedAt.Local().Format(time.RFC3339),
					x.Channel, x.Account, x.ChatID, x.UserID, x.Model, x.StopReason, strconv.Itoa(x.PromptTokens),
					strconv.Itoa(x.CompletionTokens), agent.MaskedText(x.Error), agent.MaskedText(x.Text), agent.MaskedText(x.Reply)})
			})
		},
	},
}

// exportRange reads from and to (YYYY-MM-DD, local days, both included)
// as [since, until); ok is false for a missing, reversed or too long range.
func exportRange(from, to string) (since, until time.Time, ok bool) {
	f, err1 := time.ParseInLocation(time.DateOnly, from, time.Local)
	t, err2 := time.ParseInLocation(time.DateOnly, to, time.Local)
	if err1 != nil || err2 != nil || t.Before(f) || t.Sub(f) >= exportMaxDays*24*time.Hour {
		return time.Time{}, time.Time{}, false
	}
	return f, t.AddDate(0, 0, 1), true
}

// exportCSV streams the rows of ?what= started or written in the days
// ?from= to ?to=. Past exportMaxRows the file ends with a row saying it
// was cut. An error after the first row can only cut the file short: it
// is logged.
func (c *Console) exportCSV(w http.ResponseWriter, r *request) {
	q := r.URL.Query()
	kind, ok := exportKinds[q.Get("what")]
	since, until, okRange := exportRange(q.Get("from"), q.Get("to"))
	if !ok || !okRange {
		http.Error(w, r.t["export_bad_range"], http.StatusBadRequest)
		return
	}
	name := "hermes-" + q.Get("what") + "-" + q.Get("from") + "-" + q.Get("to") + ".csv"
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	// A UTF-8 byte order mark, so that Excel reads the Chinese as UTF-8.
	_, _ = w.Write([]byte("\ufeff"))
	out := csv.NewWriter(w)
	flusher, _ := w.(http.Flusher)
	n := 0
	row := func(cells []string) error {
		n++
		if n > exportMaxRows {
			return errExportFull
		}
		for i, s := range cells {
			cells[i] = noFormula(s)
		}
		if err := out.Write(cells); err != nil {
			return err
		}
		if n%exportFlushRows == 0 {
			out.Flush()
			if flusher != nil {
				flusher.Flush()
			}
		}
		return out.Error()
	}
	_ = out.Write(kind.header)
	// One more row than the limit is asked for: its arrival says the
	// range holds more.
	err := kind.write(c, r, since, until, exportMaxRows+1, row)
	truncated := errors.Is(err, errExportFull)
	if truncated {
		_ = out.Write([]string{"# " + r.t["export_truncated"]})
		err = nil
	}
	out.Flush()
	rows := min(n, exportMaxRows)
	if err != nil {
		c.deps.Logger.Error("console: export cut short", "user", r.session.Username, "what", q.Get("what"), "rows", rows, "err", err)
		return
	}
	c.deps.Logger.Info("console: export", "user", r.session.Username, "what", q.Get("what"),
		"from", q.Get("from"), "to", q.Get("to"), "rows", rows, "truncated", truncated)
}

// noFormula quotes each part of a cell a spreadsheet would run as a
// formula (CSV injection): text from users and models may hold = + - @ (or
// a tab or CR, which OWASP lists too) at the start of the cell or of any
// part a spreadsheet may split it into: a locale whose separator is ";"
// reads "x;=40+2" as two cells, and a paste splits on tabs and lines. A
// quote before such a part makes it text.
func noFormula(s string) string {
	if !needsQuote(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	start := true
	for i := range len(s) { // the bytes looked for are ASCII: UTF-8 is kept whole
		c := s[i]
		if start && strings.IndexByte(formulaStarts, c) >= 0 {
			b.WriteByte('\'')
		}
		b.WriteByte(c)
		start = strings.IndexByte(partSeparators, c) >= 0
	}
	return b.String()
}

const (
	// formulaStarts are what a spreadsheet takes for the start of a
	// formula (OWASP, CSV Injection).
	formulaStarts = "=+-@\t\r"
	// partSeparators are where a spreadsheet may split a cell's text into
	// cells: the list separators of the locales, a tab, a line.
	partSeparators = ",;\t|\n\r"
)

// needsQuote reports whether some part of s starts like a formula.
func needsQuote(s string) bool {
	start := true
	for i := range len(s) {
		if start && strings.IndexByte(formulaStarts, s[i]) >= 0 {
			return true
		}
		start = strings.IndexByte(partSeparators, s[i]) >= 0
	}
	return false
}
