package wecom

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/hermes-gw/hermes/channels"
)

// routes are the app's callback URL: GET for the URL verification, POST
// for messages.
func (a *App) routes(sink channels.Sink) []channels.Route {
	path := "/wecom/" + a.name + "/callback"
	return []channels.Route{
		{Method: http.MethodGet, Path: path, Handler: func(w http.ResponseWriter, r *http.Request) {
			serveEcho(w, r, a.log, sink, a.name, a.VerifyURL)
		}},
		{Method: http.MethodPost, Path: path, Handler: func(w http.ResponseWriter, r *http.Request) { a.serveCallback(w, r, sink) }},
	}
}

// serveEcho answers a URL verification (app or AI bot) with the bare
// plaintext verify returns: no quotes, no newline.
func serveEcho(w http.ResponseWriter, r *http.Request, log *slog.Logger, sink channels.Sink, account string, verify func(url.Values) ([]byte, error)) {
	echo, err := verify(r.URL.Query())
	if err != nil {
		refuse(w, r, log, sink, account, "wecom callback", err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(echo)
}

// serveCallback verifies, decodes and stores a message, then acknowledges
// with an empty 200 ("no passive reply"). It never calls the model or a
// skill: WeCom gives up after 5 s and retries.
func (a *App) serveCallback(w http.ResponseWriter, r *http.Request, sink channels.Sink) {
	body, err := readBody(r)
	if err != nil {
		refuse(w, r, a.log, sink, a.name, "wecom callback", err)
		return
	}
	in, err := a.ParseCallback(r.URL.Query(), body)
	if err != nil {
		refuse(w, r, a.log, sink, a.name, "wecom callback", err)
		return
	}
	if _, err := sink.Accept(r.Context(), in); err != nil {
		refuse(w, r, a.log, sink, a.name, "wecom callback", err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// readLimited reads at most limit bytes; a longer body is an error rather
// than silently cut.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("body over %d bytes", limit)
	}
	return b, nil
}

// refuse answers a refused callback and, when the request failed one of
// the checks (not a failed Accept), records which one for the console.
func refuse(w http.ResponseWriter, r *http.Request, log *slog.Logger, sink channels.Sink, account, what string, err error) {
	channels.RefuseRecorded(w, r, log, what, err, sink, ChannelName, account)
}
