package ops

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracing follows a message from callback to delivery in two traces joined
// by a link: the callback's (Accept: verify, store, enqueue) and the run's,
// whose trace id is the run id, so `hermes runs show <id>` and the tracing
// backend name the same thing. The run's trace holds the run and the
// delivery of its reply. The span context crosses the job queue in the
// River job's metadata ("traceparent"), written only while tracing is on.

// tracerName is the instrumentation scope of Hermes's spans.
const tracerName = "github.com/hermes-gw/hermes/gateway"

// traceMetaKey is the key of the W3C traceparent in a job's metadata.
const traceMetaKey = "traceparent"

// runIDKey carries a run id to the ID generator: the run's root span takes
// it as its trace id.
type runIDKey struct{}

// withRunTraceID makes the next root span started from ctx use runID (128
// bits in hex) as its trace id.
func withRunTraceID(ctx context.Context, runID string) context.Context {
	return context.WithValue(ctx, runIDKey{}, runID)
}

// NewRunID is a new run id, 128 bits in hex: the run's trace id
// (StartRunSpan), also sent to skill backends as X-Request-ID. Its first
// 48 bits are the Unix time in milliseconds and the other 80 are random
// (as a UUIDv7's; W3C trace ids need only their right 56 bits random):
// ids made one after another sort together, so the indexes on run ids
// (runs' key, run_steps') take each new run on their last page rather
// than on a random one, which on a large table is a page read and, after
// each checkpoint, a whole page written to the WAL per run.
func NewRunID() string {
	return newRunID(time.Now())
}

func newRunID(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixMilli())<<16)
	_, _ = rand.Read(b[6:])
	return hex.EncodeToString(b[:])
}

// runIDGenerator gives a root span the run id of its context as trace id,
// and random ids otherwise.
type runIDGenerator struct{}

func (runIDGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	var tid trace.TraceID
	if id, ok := ctx.Value(runIDKey{}).(string); ok {
		if b, err := hex.DecodeString(id); err == nil && len(b) == len(tid) {
			copy(tid[:], b)
			return tid, randomSpanID()
		}
	}
	_, _ = rand.Read(tid[:])
	return tid, randomSpanID()
}

func (runIDGenerator) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return randomSpanID() }

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	_, _ = rand.Read(sid[:])
	return sid
}

// NewTracerProvider is the provider Hermes's spans need: run ids as trace
// ids, batches to exp. The caller shuts it down (flushing) on exit.
func NewTracerProvider(exp sdktrace.SpanExporter, opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	opts = append([]sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithIDGenerator(runIDGenerator{})}, opts...)
	return sdktrace.NewTracerProvider(opts...)
}

// TracerOf is the tracer of Deps.Tracing; a no-op when tracing is off.
func TracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// JobMetadata is the River job metadata carrying ctx's span, nil when
// there is none (tracing off): the job row stays as it was.
func JobMetadata(ctx context.Context) []byte {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	b, _ := json.Marshal(map[string]string{traceMetaKey: carrier[traceMetaKey]}) // strings always marshal
	return b
}

// JobSpanContext is the span a job's metadata carries; invalid when none.
func JobSpanContext(metadata []byte) trace.SpanContext {
	var meta map[string]any
	if len(metadata) == 0 || json.Unmarshal(metadata, &meta) != nil {
		return trace.SpanContext{}
	}
	tp, _ := meta[traceMetaKey].(string)
	if tp == "" {
		return trace.SpanContext{}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{traceMetaKey: tp})
	return trace.SpanContextFromContext(ctx)
}

// StartRunSpan starts a run's root span on tracer: its trace id is runID,
// linked to the span that enqueued the run (the callback), if any.
func StartRunSpan(ctx context.Context, tracer trace.Tracer, name, runID string, from trace.SpanContext, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithAttributes(attribute.String("hermes.run_id", runID)),
		trace.WithAttributes(attrs...)}
	if from.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: from}))
	}
	return tracer.Start(withRunTraceID(ctx, runID), name, opts...)
}

// EndSpan records err on span (if any) and ends it.
func EndSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// linkKey carries the span a job's metadata named from Work to process.
type linkKey struct{}

func WithLink(ctx context.Context, sc trace.SpanContext) context.Context {
	if !sc.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, linkKey{}, sc)
}

// LinkOf is the span WithLink carried, invalid when none.
func LinkOf(ctx context.Context) trace.SpanContext {
	sc, _ := ctx.Value(linkKey{}).(trace.SpanContext)
	return sc
}
