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
// skill: WeCom gives up after 5 s and retries.
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
	if _, err := sink.Accept(r.Context(), in); err != nil {
		wxbiz.Refuse(w, r, a.log, sink, a.name, "wecom callback", err)
		return
	}
	w.WriteHeader(http.StatusOK)
}
