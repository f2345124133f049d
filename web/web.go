package web

import (
	"embed"
	"html/template"
	"net/http"
)

//go:embed static/index.html
var files embed.FS

// Assets are the console's static files: static/console.css and the
// vendored htmx (static/vendor), served as they are.
//
//go:embed static/console.css static/vendor
var Assets embed.FS

var index = template.Must(template.ParseFS(files, "static/index.html"))

// Status is what the status page shows.
type Status struct {
	Version   string
	Callbacks []string // callback paths, e.g. /wecom/app-hr/callback
	Skills    []string
}

// StatusHandler serves the status page. status is called per request.
func StatusHandler(status func() Status) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := index.Execute(w, status()); err != nil {
			http.Error(w, "status page: "+err.Error(), http.StatusInternalServerError)
		}
	})
}
