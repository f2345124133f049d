package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ops"
)

// newLogger is the process log of log.format and log.level, on w.
func newLogger(cfg config.LogConfig, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(strings.ToLower(cfg.Level))) // validated by the config
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// newTracing is the tracer provider of tracing.otlp_endpoint: spans
// batched to the collector over OTLP/HTTP. Off (nil, a no-op shutdown)
// when no endpoint is set. The shutdown flushes what is batched.
func newTracing(ctx context.Context, cfg config.TracingConfig) (trace.TracerProvider, func(context.Context) error, error) {
	if cfg.OTLPEndpoint == "" {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(cfg.OTLPEndpoint, "/")+"/v1/traces"))
	if err != nil {
		return nil, nil, fmt.Errorf("config: tracing.otlp_endpoint: %w", err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(cfg.ServiceName), semconv.ServiceVersion(version))
	tp := ops.NewTracerProvider(exp, sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}
