package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hermes-gw/hermes/gateway/memory"
	"github.com/hermes-gw/hermes/gateway/privacy"
	"github.com/hermes-gw/hermes/gateway/store"
)

// privacyStore is what the console does for an employee's data request
// covering everything Hermes holds about them (gateway/privacy), each with
// its memory_audit row in the same transaction, as `hermes privacy` does.
type privacyStore struct{ db Transactions }

func (s privacyStore) export(ctx context.Context, admin string, o memory.Owner, now time.Time) (privacy.Export, error) {
	var e privacy.Export
	err := s.db.InTx(ctx, func(q store.Querier) error {
		var err error
		if e, err = privacy.ExportOf(ctx, q, privacy.Person(o), now); err != nil {
			return err
		}
		return memory.Audit(ctx, q, admin, privacy.AuditExport, o, e.Count(), now)
	})
	return e, err
}

func (s privacyStore) erase(ctx context.Context, admin string, o memory.Owner, now time.Time) (privacy.Erasure, error) {
	var e privacy.Erasure
	err := s.db.InTx(ctx, func(q store.Querier) error {
		var err error
		if e, err = privacy.Erase(ctx, q, privacy.Person(o)); err != nil {
			return err
		}
		return memory.Audit(ctx, q, admin, privacy.AuditErase, o, e.Total(), now)
	})
	return e, err
}

// exportPerson downloads everything Hermes holds about one employee as
// JSON (admins only: it is their data whole), audited.
func (c *Console) exportPerson(w http.ResponseWriter, r *request) {
	o, ok := memoryOwner(r.URL.Query().Get)
	if !ok {
		http.Error(w, r.t["memories_fill_in"], http.StatusBadRequest)
		return
	}
	e, err := c.privacy.export(r.Context(), r.session.Username, o, c.deps.Now())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	if c.downloadJSON(w, r, exportName("personal-data", o), e) {
		c.deps.Logger.Info("console: personal data exported", "admin", r.session.Username, "corp", o.CorpID, "user", o.UserID, "records", e.Count())
	}
}

// erasePerson erases everything Hermes holds about one employee, audited,
// and goes back to the lookup, which says how many rows it changed.
func (c *Console) erasePerson(w http.ResponseWriter, r *request) {
	o, ok := memoryOwner(r.PostFormValue)
	if !ok {
		http.Error(w, r.t["memories_fill_in"], http.StatusBadRequest)
		return
	}
	e, err := c.privacy.erase(r.Context(), r.session.Username, o, c.deps.Now())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.deps.Logger.Info("console: personal data erased", "admin", r.session.Username, "corp", o.CorpID, "user", o.UserID, "rows", e.Total())
	back := url.Values{"corp": {o.CorpID}, "user": {o.UserID}, "erased": {strconv.Itoa(e.Total())}}
	http.Redirect(w, r.Request, Prefix+"/memories?"+back.Encode(), http.StatusSeeOther)
}
