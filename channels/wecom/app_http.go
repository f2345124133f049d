package wecom

import (
	"net/http"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/wecom/wxbiz"
)

// routes are the app's callback URL: GET for the URL verification, POST
// for messages.
func (a *App) routes(sink channels.Sink) []channels.Route {
	path := "/wecom/" + a.name + "/callback"
	return []channels.Route{
		{Method: http.MethodGet, Path: path, Handler: func(w http.ResponseWriter, r *http.Request) {
			wxbiz.ServeEcho(w, r, a.log, sink, a.name, a.VerifyURL)
		}},
		{Method: http.MethodPost, Path: path, Handler: func(w http.ResponseWriter, r *http.Request) { a.serveCallback(w, r, sink) }},
	}
}

// serveCallback verifies, decodes and stores a message, then acknowledges
// with an empty 200 ("no passive reply"). It never calls the model or a
// skill: WeCom gives up after 5 s and retries. A click on a card is
// answered, once Accept recorded it, with the card's new state for the
// clicker as an encrypted passive reply (cardevent.go).
func (a *App) serveCallback(w http.ResponseWriter, r *http.Request, sink channels.Sink) {
	body, err := wxbiz.ReadBody(r)
	if err != nil {
		wxbiz.Refuse(w, r, a.log, sink, a.name, "wecom callback", err)
		return
	}
	in, err := a.ParseCallback(r.URL.Query(), body)
	if err != nil {
		wxbiz.Refuse(w, r, a.log, sink, a.name, "wecom callback", err)
		return
	}
	receipt, err := sink.Accept(r.Context(), in)
	if err != nil {
		wxbiz.Refuse(w, r, a.log, sink, a.name, "wecom callback", err)
		return
	}
	if in.Click != nil {
		reply, err := a.cardReply(in, receipt.Card, r.URL.Query().Get("nonce"))
		if err != nil {
			// The tap is recorded: the later update shows the outcome.
			a.log.Warn("wecom: card click answered without a passive reply", "account", a.name, "card_id", in.Click.Card, "err", err)
		}
		if reply != nil {
			w.Header().Set("Content-Type", "application/xml; charset=utf-8")
			_, _ = w.Write(reply)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}
