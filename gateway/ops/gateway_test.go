package ops_test

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hermes-gw/hermes/agent/openaitest"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/channels/chantest"
	"github.com/hermes-gw/hermes/gateway"
	"github.com/hermes-gw/hermes/gateway/gatewaytest"
	"github.com/hermes-gw/hermes/gateway/ops"
)

// TestMetrics: one message through callback, run, skill and delivery
// shows in each of the metrics, on a registry of the gateway's own.
func TestMetrics(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	reg := prometheus.NewRegistry()
	h.Start(gateway.Deps{Metrics: reg})
	gatewaytest.AskLeave(t, h, "metrics-1")
	// A repeated callback is counted as such.
	u, body := h.CallbackRequest(gatewaytest.TextXML("zhangsan", "我还有几天年假？", "metrics-1"), time.Now())
	gatewaytest.Post(t, u, body)

	status, text := gatewaytest.Get(t, h.Srv.URL+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d", status)
	}
	for _, want := range []string{
		`hermes_callbacks_total{channel="wecom",status="new"} 1`,
		`hermes_callbacks_total{channel="wecom",status="repeat"} 1`,
		`hermes_accept_duration_seconds_count{channel="wecom"} 2`,
		`hermes_http_requests_total{code="200",route="/wecom/app-hr/callback"} 2`,
		`hermes_runs_total{channel="wecom",stop_reason="finished"} 1`,
		`hermes_model_call_duration_seconds_count 2`,
		`hermes_model_tokens_total{kind="prompt"}`,
		`hermes_skill_calls_total{skill="hr_leave_balance",status="ok"} 1`,
		`hermes_skill_call_duration_seconds_count{skill="hr_leave_balance"} 1`,
		`hermes_skill_breaker_state{skill="it_password_reset"} 0`,
		`hermes_deliveries_total{channel="wecom",status="delivered"} 1`,
		`hermes_queue_jobs{queue="agent",state="available"} 0`,
		`hermes_queue_oldest_available_seconds{queue="delivery"} 0`,
		`go_goroutines `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}

	// A second gateway in the same process registers on its own registry.
	if _, err := gateway.New(context.Background(), h.Config(), gateway.Deps{Pool: h.Pool, Platforms: gatewaytest.Platforms, Logger: gatewaytest.Logger(t)}); err != nil {
		t.Fatal(err)
	}
}

// TestMetricsOff: metrics.enabled: false serves no /metrics.
func TestMetricsOff(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	h.StartExtra("metrics:\n  enabled: false\n", gateway.Deps{})
	if status, _ := gatewaytest.Get(t, h.Srv.URL+"/metrics"); status != http.StatusNotFound {
		t.Errorf("/metrics with metrics off: %d, want 404", status)
	}
}

// TestTracing: the callback's span, and the run and its delivery in a
// trace whose id is the run id, linked to the callback.
func TestTracing(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	exp := tracetest.NewInMemoryExporter()
	tp := ops.NewTracerProvider(exp)
	h.Start(gateway.Deps{Tracing: tp})
	gatewaytest.AskLeave(t, h, "trace-1")
	// The reply reaches the platform before its replica ends the delivery's
	// span and then the run's (the replica sends the answer it committed,
	// inside the run): wait for both to end.
	ended := func(name string) bool {
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				return true
			}
		}
		return false
	}
	gatewaytest.WaitFor(t, gatewaytest.WithTimeout(t, 10*time.Second), func() bool {
		if err := tp.ForceFlush(context.Background()); err != nil {
			t.Fatal(err)
		}
		return ended("hermes.run") && ended("hermes.deliver")
	})
	var runID string
	if err := h.Pool.QueryRow(context.Background(), `SELECT id FROM runs`).Scan(&runID); err != nil {
		t.Fatal(err)
	}
	spans := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = s
	}
	accept, run, deliver := spans["hermes.accept"], spans["hermes.run"], spans["hermes.deliver"]
	if !accept.SpanContext.IsValid() || !run.SpanContext.IsValid() || !deliver.SpanContext.IsValid() {
		t.Fatalf("spans = %v, want hermes.accept, hermes.run, hermes.deliver", keys(spans))
	}
	if got := run.SpanContext.TraceID().String(); got != runID {
		t.Errorf("run trace id %s, want the run id %s", got, runID)
	}
	if deliver.SpanContext.TraceID() != run.SpanContext.TraceID() || deliver.Parent.SpanID() != run.SpanContext.SpanID() {
		t.Errorf("delivery span not a child of the run's span")
	}
	if len(run.Links) != 1 || run.Links[0].SpanContext.SpanID() != accept.SpanContext.SpanID() {
		t.Errorf("run span links %v, want the callback's span", run.Links)
	}
	// The skill backend got the run's trace in its traceparent.
	if calls := h.Backend.Calls(); len(calls) != 1 || !strings.Contains(calls[0].Traceparent, hex.EncodeToString(mustHex(t, runID))) {
		t.Errorf("skill traceparent %+v, want the run id", calls)
	}
}

func mustHex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestHealthAndReadiness: /healthz is the process; /readyz fails while a
// migration is missing and once the replica drains.
func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	gw := h.Start(gateway.Deps{})
	if status, _ := gatewaytest.Get(t, h.Srv.URL+"/healthz"); status != http.StatusOK {
		t.Errorf("/healthz: %d", status)
	}
	ready := func(status int, body string) bool {
		return status == http.StatusOK && strings.Contains(body, `{"name":"migrations","ok":true}`) && strings.Contains(body, `{"name":"postgres","ok":true}`)
	}
	if status, body := gatewaytest.Probe(t, h.Srv.URL+"/readyz", ready); !ready(status, body) {
		t.Errorf("/readyz: %d %s", status, body)
	}

	ctx := context.Background()
	var last int64
	if err := h.Pool.QueryRow(ctx, `DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version) RETURNING version_id`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	pending := func(status int, body string) bool {
		return status == http.StatusServiceUnavailable && strings.Contains(body, "migrations pending")
	}
	if status, body := gatewaytest.Probe(t, h.Srv.URL+"/readyz", pending); !pending(status, body) {
		t.Errorf("/readyz with migration %d missing: %d %s", last, status, body)
	}
	if _, err := h.Pool.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, last); err != nil {
		t.Fatal(err)
	}

	gw.Drain()
	if status, body := gatewaytest.Get(t, h.Srv.URL+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz while draining: %d %s", status, body)
	}
	if status, _ := gatewaytest.Get(t, h.Srv.URL+"/healthz"); status != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200", status)
	}
}

// TestAPIRunTrace: an API turn's trace id is its run id, linked to the
// client's traceparent.
func TestAPIRunTrace(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	exp := tracetest.NewInMemoryExporter()
	tp := ops.NewTracerProvider(exp)
	h.StartExtra(gatewaytest.OpenAIYAML, gateway.Deps{Tracing: tp})
	h.Model.Script(openaitest.Reply{Content: "你好"})
	const client = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, _ := http.NewRequest(http.MethodPost, h.Srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"hermes","messages":[{"role":"user","content":"你好"}]}`))
	req.Header.Set("Authorization", "Bearer "+gatewaytest.APIKeyLisi)
	req.Header.Set("traceparent", client)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var runID string
	if err := h.Pool.QueryRow(context.Background(), `SELECT id FROM runs`).Scan(&runID); err != nil {
		t.Fatal(err)
	}
	for _, s := range exp.GetSpans() {
		if s.Name != "hermes.api_run" {
			continue
		}
		if s.SpanContext.TraceID().String() != runID || len(s.Links) != 1 ||
			s.Links[0].SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("api span trace %s links %v, want run %s linked to the client", s.SpanContext.TraceID(), s.Links, runID)
		}
		return
	}
	t.Fatalf("no hermes.api_run span among %d", len(exp.GetSpans()))
}

// panickyChannel is a channel whose callback route panics.
type panickyChannel struct{ *chantest.Channel }

func (panickyChannel) Routes(channels.Sink) []channels.Route {
	return []channels.Route{{Method: http.MethodPost, Path: "/panicky/callback",
		Handler: func(http.ResponseWriter, *http.Request) { panic("a frame the code does not handle") }}}
}

// TestHandlerPanicCostsOneRequest: a callback handler's panic is a 500
// for that request, counted in hermes_connection_panics_total, and the
// process serves the next request.
func TestHandlerPanicCostsOneRequest(t *testing.T) {
	t.Parallel()
	h := gatewaytest.New(t)
	reg := prometheus.NewRegistry()
	h.Start(gateway.Deps{Metrics: reg, Channels: []channels.Channel{panickyChannel{chantest.New("panicky", channels.Limits{MaxBytes: 2048})}}})
	resp, err := http.Post(h.Srv.URL+"/panicky/callback", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", resp.StatusCode)
	}
	status, text := gatewaytest.Get(t, h.Srv.URL+"/metrics")
	if want := `hermes_connection_panics_total{account="/panicky/callback",channel="http"} 1`; status != http.StatusOK || !strings.Contains(text, want) {
		t.Fatalf("/metrics %d lacks %s", status, want)
	}
	if status, _ := gatewaytest.Get(t, h.Srv.URL+"/healthz"); status != http.StatusOK {
		t.Fatalf("/healthz after the panic: %d", status)
	}
}
