package feishu

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
)

// The endpoint refusing the app itself (its SDK's AuthFailed, Forbidden,
// NoCredential) is the credentials' fault, so the reconnect loop stands
// back longer; any other code is an ordinary failure.
func TestEndpointRefusalIsCredentials(t *testing.T) {
	for code, refused := range map[int]bool{514: true, 403: true, 1000040344: true, 1: false, 1000040343: false} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"code":%d,"msg":"refused","data":{}}`, code)
			}))
			t.Cleanup(srv.Close)
			a := newApp(AppSection{Name: "bot", Mode: ModeWebSocket, AppID: "cli_x", AppSecret: "s", Domain: srv.URL},
				DefaultTimestampWindow, chantest.NewTokenCache(), channels.Env{Logger: slog.New(slog.DiscardHandler)})
			err := a.connectOnce(t.Context(), nil)
			if err == nil || errors.Is(err, channels.ErrCredentials) != refused {
				t.Fatalf("connectOnce = %v, want ErrCredentials %v", err, refused)
			}
		})
	}
}
