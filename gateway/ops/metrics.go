package ops

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/skills"
)

// Sources are what the collectors read at each scrape.
type Sources struct {
	Pool *pgxpool.Pool
	Now  func() time.Time
	// Queues always report, at zero when empty, so a dashboard tells
	// "empty" from "not scraped".
	Queues []string
	// Skills is the current skill registry (breaker states).
	Skills func() *skills.Registry
}

// Metrics are every Prometheus metric of one gateway, registered on the
// registry in Deps.Metrics (never the global one, so a test can run
// several gateways). A nil *Metrics records nothing: metrics.enabled: false.
type Metrics struct {
	reg *prometheus.Registry

	callbacks     *prometheus.CounterVec   // channel, status
	acceptSeconds *prometheus.HistogramVec // channel
	httpRequests  *prometheus.CounterVec   // route, code
	httpSeconds   *prometheus.HistogramVec // route
	runs          *prometheus.CounterVec   // channel, stop_reason
	runSeconds    *prometheus.HistogramVec // channel
	modelSeconds  prometheus.Histogram
	modelTokens   *prometheus.CounterVec   // kind: prompt|completion
	skillCalls    *prometheus.CounterVec   // skill, status
	skillSeconds  *prometheus.HistogramVec // skill
	deliveries    *prometheus.CounterVec   // channel, status
	connPanics    *prometheus.CounterVec   // channel, account
	fetchRefused  *prometheus.CounterVec   // channel, account
	cardFallback  *prometheus.CounterVec   // channel
}

// Outcomes of Accept, the status label of hermes_callbacks_total.
const (
	acceptNew       = "new"        // stored, with a job when it needs an answer
	acceptRepeat    = "repeat"     // the platform retried one already stored
	acceptNotForBot = "not_for_us" // a group message not addressed to the bot
	acceptError     = "error"      // not stored; the platform retries
	acceptReplayed  = "replayed"   // refused: its single-use proof was used by another message
)

// Outcomes of one delivery attempt, the status label of hermes_deliveries_total.
const (
	deliveryOK       = "delivered"
	deliveryDeferred = "deferred" // held back: a live reply may show it
	deliveryRetry    = "failed"   // retried later
	deliveryGivenUp  = "given_up" // permanent, or the last attempt
)

// Bucket boundaries in seconds. An ack must stay well inside the
// platforms' 1–5 s windows; model and skill calls take seconds.
var (
	ackBuckets   = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	slowBuckets  = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80}
	queryTimeout = 2 * time.Second // the queue-depth query of one scrape
)

// collectors are every metric and collector NewMetrics registers: the
// list the shipped dashboard and alert rules (deploy/) are checked against.
func (m *Metrics) collectors(src Sources) []prometheus.Collector {
	return []prometheus.Collector{m.callbacks, m.acceptSeconds, m.httpRequests, m.httpSeconds, m.runs, m.runSeconds,
		m.modelSeconds, m.modelTokens, m.skillCalls, m.skillSeconds, m.deliveries, m.connPanics, m.fetchRefused, m.cardFallback,
		queueCollector{src: src}, breakerCollector{src: src},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
}

// NewMetrics registers the gateway's metrics and collectors on reg.
func NewMetrics(reg *prometheus.Registry, src Sources) *Metrics {
	m := &Metrics{
		reg: reg,
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_callbacks_total",
			Help: "Verified inbound messages handed to the inbox, by channel and outcome (new, repeat, not_for_us, error, replayed)."},
			[]string{"channel", "status"}),
		acceptSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hermes_accept_duration_seconds",
			Help: "Time to store an inbound message and its job (the ack's critical path), by channel.", Buckets: ackBuckets},
			[]string{"channel"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_http_requests_total",
			Help: "HTTP requests by route pattern and status code."}, []string{"route", "code"}),
		httpSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hermes_http_request_duration_seconds",
			Help: "HTTP request latency by route pattern: for callbacks, the platform's ack latency.", Buckets: ackBuckets},
			[]string{"route"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_runs_total",
			Help: "Agent runs by channel and stop reason."}, []string{"channel", "stop_reason"}),
		runSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hermes_run_duration_seconds",
			Help: "Agent run wall time by channel.", Buckets: slowBuckets}, []string{"channel"}),
		modelSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hermes_model_call_duration_seconds",
			Help: "Latency of one model call.", Buckets: slowBuckets}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_model_tokens_total",
			Help: "Tokens the model reported, by kind (prompt, completion)."}, []string{"kind"}),
		skillCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_skill_calls_total",
			Help: "Skill calls by skill and status (ok, error)."}, []string{"skill", "status"}),
		skillSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hermes_skill_call_duration_seconds",
			Help: "Skill call latency by skill.", Buckets: slowBuckets}, []string{"skill"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_deliveries_total",
			Help: "Reply part send attempts by channel and status (delivered, deferred, failed, given_up)."},
			[]string{"channel", "status"}),
		connPanics: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_connection_panics_total",
			Help: "Panics recovered in a goroutine serving a platform peer (a long connection, a stream) by channel and account, or an HTTP request (channel http, account the route); each ended only that connection, stream or request."},
			[]string{"channel", "account"}),
		fetchRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_fetch_refused_total",
			Help: "URLs from a callback or frame (a media URL, a response_url, a session webhook) not fetched because they named a host outside the platform's or connected to an internal address, by channel and account."},
			[]string{"channel", "account"}),
		cardFallback: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hermes_card_fallbacks_total",
			Help: "Confirmation or choice cards sent as text instead, because the platform refused the card (a missing permission, a platform error), by channel."},
			[]string{"channel"}),
	}
	reg.MustRegister(m.collectors(src)...)
	return m
}

// Accepted records one Accept: its outcome and how long it took.
func (m *Metrics) Accepted(channel string, r channels.Receipt, err error, took time.Duration) {
	if m == nil {
		return
	}
	status := acceptNotForBot
	switch {
	case errors.Is(err, channels.ErrReplayed):
		status = acceptReplayed
	case err != nil:
		status = acceptError
	case r.New:
		status = acceptNew
	case r.Answer:
		status = acceptRepeat
	}
	m.callbacks.WithLabelValues(channel, status).Inc()
	m.acceptSeconds.WithLabelValues(channel).Observe(took.Seconds())
}

// Ran records a finished agent run and each of its model and tool steps.
func (m *Metrics) Ran(channel string, res agent.Result, took time.Duration) {
	if m == nil {
		return
	}
	m.runs.WithLabelValues(channel, res.StopReason).Inc()
	m.runSeconds.WithLabelValues(channel).Observe(took.Seconds())
	for _, s := range res.Steps {
		switch s.Kind {
		case agent.StepModel:
			m.modelSeconds.Observe(s.Latency.Seconds())
			m.modelTokens.WithLabelValues("prompt").Add(float64(s.PromptTokens))
			m.modelTokens.WithLabelValues("completion").Add(float64(s.CompletionTokens))
		case agent.StepTool:
			status := "ok"
			if s.Error != "" {
				status = "error"
			}
			m.skillCalls.WithLabelValues(s.Tool, status).Inc()
			m.skillSeconds.WithLabelValues(s.Tool).Observe(s.Latency.Seconds())
		}
	}
}

// CardFallback records a card sent as text instead (gateway/cards.go).
func (m *Metrics) CardFallback(channel string) {
	if m == nil {
		return
	}
	m.cardFallback.WithLabelValues(channel).Inc()
}

// Delivered records one send attempt of a reply part.
func (m *Metrics) Delivered(channel string, sendErr error, gaveUp bool) {
	if m == nil {
		return
	}
	status := deliveryOK
	switch {
	case sendErr != nil && gaveUp:
		status = deliveryGivenUp
	case sendErr != nil:
		status = deliveryRetry
	}
	m.deliveries.WithLabelValues(channel, status).Inc()
}

// Held records a part held back, not sent, because a live reply may
// still show it (status deferred).
func (m *Metrics) Held(channel string) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(channel, deliveryDeferred).Inc()
}

// Panicked counts a panic recovered on a long connection of channel/account.
func (m *Metrics) Panicked(channel, account string) {
	if m == nil {
		return
	}
	m.connPanics.WithLabelValues(channel, account).Inc()
}

// FetchRefused counts a URL from a callback or frame of channel/account
// that the channel's fetch guard refused.
func (m *Metrics) FetchRefused(channel, account string) {
	if m == nil {
		return
	}
	m.fetchRefused.WithLabelValues(channel, account).Inc()
}

// Middleware counts requests by route pattern (never the raw path: async
// tokens live in it) and times them.
func (m *Metrics) Middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		m.httpRequests.WithLabelValues(route, strconv.Itoa(c.Writer.Status())).Inc()
		m.httpSeconds.WithLabelValues(route).Observe(time.Since(start).Seconds())
	}
}

// Handler serves /metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// queueCollector reads the job queue's depth from river_job at each scrape
// (shared by all replicas: every replica reports the same numbers).
type queueCollector struct{ src Sources }

var (
	queueJobsDesc = prometheus.NewDesc("hermes_queue_jobs",
		"Jobs in the queue by queue and state (available, scheduled, running, retryable).", []string{"queue", "state"}, nil)
	queueOldestDesc = prometheus.NewDesc("hermes_queue_oldest_available_seconds",
		"Age of the oldest job waiting to run, by queue.", []string{"queue"}, nil)
)

func (queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueJobsDesc
	ch <- queueOldestDesc
}

func (q queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	rows, err := q.src.Pool.Query(ctx, `
SELECT queue, state::text, count(*),
       COALESCE(EXTRACT(EPOCH FROM ($1 - min(scheduled_at) FILTER (WHERE state = 'available'))), 0)
FROM river_job WHERE state::text = ANY($2)
GROUP BY queue, state`, q.src.Now(), queueStates)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueJobsDesc, err)
		return
	}
	defer rows.Close()
	// The main queues always report, at zero when empty: a dashboard
	// tells "empty" from "not scraped".
	counts := map[[2]string]int64{}
	oldestBy := map[string]float64{}
	for _, queue := range q.src.Queues {
		for _, state := range queueStates {
			counts[[2]string{queue, state}] = 0
		}
	}
	for rows.Next() {
		var queue, state string
		var n int64
		var oldest float64
		if err := rows.Scan(&queue, &state, &n, &oldest); err != nil {
			ch <- prometheus.NewInvalidMetric(queueJobsDesc, err)
			return
		}
		counts[[2]string{queue, state}] = n
		if state == "available" {
			oldestBy[queue] = max(oldest, 0)
		}
	}
	if err := rows.Err(); err != nil {
		ch <- prometheus.NewInvalidMetric(queueJobsDesc, err)
		return
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(queueJobsDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
		if k[1] == "available" {
			ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, oldestBy[k[0]], k[0])
		}
	}
}

// queueStates are the states of jobs not yet done.
var queueStates = []string{"available", "scheduled", "running", "retryable"}

// breakerCollector reports each skill's circuit breaker on this replica.
type breakerCollector struct{ src Sources }

var breakerDesc = prometheus.NewDesc("hermes_skill_breaker_state",
	"Circuit breaker state per skill on this replica: 0 closed, 1 half-open, 2 open.", []string{"skill"}, nil)

// breakerValues maps skills.Registry.BreakerState to the gauge's value.
var breakerValues = map[string]float64{"closed": 0, "half-open": 1, "open": 2}

func (breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerDesc }

func (b breakerCollector) Collect(ch chan<- prometheus.Metric) {
	reg := b.src.Skills()
	for _, s := range reg.Skills() {
		if v, ok := breakerValues[reg.BreakerState(s.Name)]; ok {
			ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, v, s.Name)
		}
	}
}
