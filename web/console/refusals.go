package console

import (
	"time"

	"github.com/hermes-gw/hermes/gateway/store"
)

// refusalView is an account's newest refused callback, explained: which
// check failed and what is likely misconfigured (texts "refusal_<check>").
type refusalView struct {
	Text  string
	Count int64
	At    time.Time
}

// explainRefusal is r in the text t; a check without a text shows as its word.
func explainRefusal(t map[string]string, r store.Refusal) *refusalView {
	text, ok := t["refusal_"+r.Check]
	if !ok {
		text = r.Check
	}
	return &refusalView{Text: text, Count: r.Count, At: r.At}
}
