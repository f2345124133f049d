package channels

import (
	"errors"
	"log/slog"
	"net/http"
)

// statusOf maps the shared errors to the HTTP status a platform (or an API
// client) is answered with. It is the only such table: platform errors
// wrap these, and the gateway's own API errors do too.
var statusOf = []struct {
	err    error
	status int
}{
	{ErrUnavailable, http.StatusServiceUnavailable},
	{ErrUnknownAccount, http.StatusNotFound},
	{ErrBadRequest, http.StatusBadRequest},
	{ErrUnauthorized, http.StatusUnauthorized},
	{ErrGone, http.StatusGone},
}

// ErrGone: a resource that existed and is used up (a single-use callback
// URL already answered).
var ErrGone = errors.New("gone")

// HTTPStatus is the status that answers err: 503 for ErrUnavailable (the
// platform retries), 401, 400, 404, 410 for the refusals, 500 otherwise.
func HTTPStatus(err error) int {
	for _, m := range statusOf {
		if errors.Is(err, m.err) {
			return m.status
		}
	}
	return http.StatusInternalServerError
}

// Refuse logs a refused request once, with what, and answers it with the
// mapped status and its plain text.
func Refuse(w http.ResponseWriter, r *http.Request, log *slog.Logger, what string, err error) {
	status := HTTPStatus(err)
	// Callback paths carry account names, never secrets.
	log.Warn(what+" refused", "path", r.URL.Path, "status", status, "err", err)
	http.Error(w, http.StatusText(status), status)
}

// RefuseRecorded is Refuse for a callback of channel/account: when err is
// the request's fault (RefusalCheck names the check it failed) it records
// the refusal in sink first, so the console can say which check fails; a
// failed Accept records nothing.
func RefuseRecorded(w http.ResponseWriter, r *http.Request, log *slog.Logger, what string, err error, sink Sink, channel, account string) {
	if check := RefusalCheck(err); check != "" {
		sink.Refused(r.Context(), channel, account, check)
	}
	Refuse(w, r, log, what, err)
}
