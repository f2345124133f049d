// Package gateway wires Hermes together: the HTTP server that acknowledges
// platform callbacks, the inbox that stores them with a job in one
// transaction, the workers that run the agent one session at a time, and the
// outbox that delivers each reply exactly once.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/store"
	"github.com/hermes-gw/hermes/skills"
)

// Queue names. Console jobs go to a queue of the process that owns the
// terminal, so a `hermes serve` replica never takes them.
const (
	QueueAgent    = "agent"
	QueueDelivery = "delivery"
)

// JobSlack is the time a job gets beyond the agent's run budget for loading
// and storing; River cancels a job's context after RunTimeout + JobSlack.
const JobSlack = 15 * time.Second

// Deps are what a Gateway needs besides its Config.
type Deps struct {
	Pool *pgxpool.Pool
	// Model overrides the model built from Config.Model (tests, demo).
	Model agent.Model
	// SkillsFS overrides the skill folder of Config.Skills.Dir (the demo's
	// embedded samples).
	SkillsFS fs.FS
	// Platforms are the chat platforms this binary knows (registered in
	// cmd/hermes); each configured platform section builds its channel.
	Platforms []channels.Platform
	// Channels are extra channels built by the caller (the console, tests).
	Channels []channels.Channel
	// Queues this process works, with their concurrency. Nil: the agent and
	// delivery queues sized from Config.Worker. Empty non-nil map: insert only.
	Queues map[string]int
	// QueueFor routes a channel's jobs to a queue; nil routes all to the
	// agent and delivery queues.
	QueueFor func(channel string) (agentQueue, deliveryQueue string)
	Now      func() time.Time
	Logger   *slog.Logger
	// Metrics is the registry /metrics serves; nil: a new one (each
	// gateway its own, never the global registry).
	Metrics *prometheus.Registry
	// Tracing receives the spans; nil: tracing off (a no-op tracer).
	Tracing trace.TracerProvider
}

// Gateway is one Hermes process: HTTP callbacks in, replies out.
type Gateway struct {
	cfg      *Config
	pool     *pgxpool.Pool
	river    *river.Client[pgx.Tx]
	model    agent.Model
	limiter  *modelLimiter // in front of model, shared by this replica's runs
	skills   *skills.Live
	skillsFS fs.FS // where skill definitions are (re)loaded from; nil: none
	mcp      *skills.MCPClients
	channels map[string]channels.Channel
	queueFor func(string) (string, string)
	// exclusive maps "channel/account" of accounts whose one long
	// connection runs on one replica at a time to the queue of their
	// deliveries, which only that replica works.
	exclusive  map[string]string
	replicaID  string // this process among the replicas, for leases
	works      bool   // this process works at least one queue
	serves     bool   // a full replica: it also keeps the long connections
	pacer      pacer  // when this replica last swept the shared rate windows
	conns      connections
	live       liveReplies // live replies running here (live.go)
	leases     runLeases
	stopLease  context.CancelFunc // ends keepLeases
	leaseDone  chan struct{}      // closed when keepLeases returned
	now        func() time.Time
	log        *slog.Logger
	routeUse   routeLimiter // per router key, this replica
	apiLimits  apiLimits    // per OpenAI API key, this replica
	metrics    *metrics     // nil when metrics.enabled is false
	tracer     trace.Tracer
	draining   atomic.Bool // shutting down: /readyz answers 503
	connStates connStates  // for /readyz
}

// New builds a gateway. It does not start workers; call Start.
func New(ctx context.Context, cfg *Config, deps Deps) (*Gateway, error) {
	if deps.Pool == nil {
		return nil, errors.New("gateway: no database pool")
	}
	g, err := build(ctx, cfg, deps)
	if err != nil {
		return nil, err
	}
	client, err := g.newRiver(deps)
	if err != nil {
		return nil, err
	}
	g.river = client
	return g, nil
}

// Check refuses a configuration New would refuse, without a database: it
// builds what New builds from cfg (the model, the skill definitions, every
// platform section's channel) and checks database.max_conns, but opens no
// connection and starts nothing. deps.Pool is not used. `hermes migrate`
// calls it, so that a config `hermes serve` refuses is refused before the
// database is touched. Errors name the key.
func Check(ctx context.Context, cfg *Config, deps Deps) error {
	deps.Pool = nil
	g, err := build(ctx, cfg, deps)
	if err != nil {
		return err
	}
	return g.mcp.Close()
}

// build is New without the job queue: everything a config names. Without
// deps.Pool (Check) the channels get a token cache they never use.
func build(ctx context.Context, cfg *Config, deps Deps) (*Gateway, error) {
	g := &Gateway{
		cfg:       cfg,
		pool:      deps.Pool,
		channels:  map[string]channels.Channel{},
		exclusive: map[string]string{},
		replicaID: newRunID(),
		queueFor:  deps.QueueFor,
		now:       deps.Now,
		log:       deps.Logger,
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.queueFor == nil {
		g.queueFor = func(string) (string, string) { return QueueAgent, QueueDelivery }
	}

	g.tracer = tracerOf(deps.Tracing)
	if cfg.Metrics.MetricsOn() {
		reg := deps.Metrics
		if reg == nil {
			reg = prometheus.NewRegistry()
		}
		g.metrics = newMetrics(reg, g)
	}

	g.model = deps.Model
	if g.model == nil {
		m, err := NewModel(cfg.Model)
		if err != nil {
			return nil, err
		}
		g.model = m
	}
	g.limiter = newModelLimiter(cfg.Model)

	g.skillsFS = deps.SkillsFS
	if g.skillsFS == nil && cfg.Skills.Dir != "" {
		g.skillsFS = os.DirFS(cfg.Skills.Dir)
	}
	g.mcp = skills.NewMCPClients()
	reg, err := g.buildSkills()
	if err != nil {
		return nil, err
	}
	g.skills = skills.NewLive(reg)
	if err := reg.CheckEnv(); err != nil {
		// Not fatal: a secret may be provided later; calls fail closed until then.
		g.log.Warn("skills: secrets missing; these skills will refuse to run", "err", err)
	}

	if err := g.buildChannels(ctx, deps.Platforms, deps.Channels); err != nil {
		return nil, err
	}

	if need, have := g.connsNeeded(deps), poolConns(cfg, deps); have < need {
		return nil, fmt.Errorf("config: database.max_conns: %d connections are too few; need at least %d (worker.delivery_concurrency + %d)",
			have+store.ListenerConns, need+store.ListenerConns, minSpareConns+store.ListenerConns)
	}
	return g, nil
}

// poolConns are the connections the pool holds: deps.Pool's, or without
// one those store.Open would give it for database.max_conns.
func poolConns(cfg *Config, deps Deps) int32 {
	if deps.Pool != nil {
		return deps.Pool.Config().MaxConns
	}
	return cfg.Database.MaxConns - store.ListenerConns
}

// NewModel builds the model a config names.
func NewModel(cfg ModelConfig) (agent.Model, error) {
	switch cfg.Provider {
	case "offline":
		return agent.OfflineModel{}, nil
	case "openai", "":
		return agent.NewOpenAIModel(agent.OpenAIConfig{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: modelHTTPClient(cfg)}), nil
	default:
		return nil, fmt.Errorf("config: model.provider: unknown provider %q", cfg.Provider)
	}
}

// buildSkills loads the skill definitions into a new registry wired to
// this gateway (async callbacks, shared MCP sessions).
func (g *Gateway) buildSkills() (*skills.Registry, error) {
	opts := skills.Options{
		BaseURL:          g.cfg.Skills.BaseURL,
		Now:              g.now,
		Async:            asyncRegistrar{g: g},
		CommandAllowList: g.cfg.Skills.CommandAllowList,
		MCP:              g.mcp,
		Logger:           g.log,
	}
	// The default identity key (skills.identity_key); NewRegistry validates it.
	opts.DefaultHMACKeyEnv, opts.DefaultHMACKeyFile = g.cfg.Skills.IdentityKey.Env, g.cfg.Skills.IdentityKey.File
	if g.skillsFS == nil {
		return skills.NewRegistry(nil, opts)
	}
	// Errors name the file and field (a/SKILL.md:5: timout: unknown field).
	return skills.LoadRegistry(g.skillsFS, opts)
}

// ReloadSkills re-reads the skill definitions (on SIGHUP). A broken new set
// is refused and the current one stays; runs in flight keep their tools.
func (g *Gateway) ReloadSkills() error {
	if err := g.skills.Reload(g.buildSkills); err != nil {
		return err
	}
	g.log.Info("skills reloaded", "count", len(g.skills.Load().Skills()))
	return nil
}

// asyncExpiryInterval is how often unanswered async tasks are looked for.
const asyncExpiryInterval = 30 * time.Second

// fetchCooldown is the least time between two fetches of a queue's jobs;
// it also spaces River's insert notifications per queue.
const fetchCooldown = 20 * time.Millisecond

// minSpareConns are the connections a replica needs beside its
// deliveries: River's own (fetching, completing, leader election, LISTEN)
// and room for the runs' short transactions and the callbacks. Runs hold
// no connection while they wait, so agent concurrency does not count.
const minSpareConns = 8

// connsNeeded is the smallest pool this process works with: a delivery
// holds its conversation's lock on a connection while it sends (and runs
// its queries on it); runs and callbacks share the spare ones.
func (g *Gateway) connsNeeded(deps Deps) int32 {
	deliveries := g.cfg.Worker.DeliveryConcurrency
	if deps.Queues != nil {
		deliveries = deps.Queues[QueueDelivery]
	}
	return int32(deliveries + minSpareConns)
}

func (g *Gateway) newRiver(deps Deps) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &processWorker{g: g})
	river.AddWorker(workers, &deliverWorker{g: g})
	river.AddWorker(workers, &expireAsyncWorker{g: g})
	river.AddWorker(workers, &runReportWorker{g: g})

	queueSizes := deps.Queues
	if queueSizes == nil {
		queueSizes = map[string]int{
			QueueAgent:    g.cfg.Worker.AgentConcurrency,
			QueueDelivery: g.cfg.Worker.DeliveryConcurrency,
		}
	}
	var queues map[string]river.QueueConfig
	var periodic []*river.PeriodicJob
	if _, ok := queueSizes[QueueDelivery]; ok {
		// Async tasks that never got an answer are timed out by the leader.
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(asyncExpiryInterval),
			func() (river.JobArgs, *river.InsertOpts) {
				return ExpireAsyncArgs{}, &river.InsertOpts{Queue: QueueDelivery}
			}, &river.PeriodicJobOpts{RunOnStart: true}))
	}
	g.serves = deps.Queues == nil
	if len(queueSizes) > 0 {
		g.works = true
		queues = map[string]river.QueueConfig{}
		for name, n := range queueSizes {
			queues[name] = river.QueueConfig{MaxWorkers: n}
		}
	}
	client, err := river.NewClient(riverpgxv5.New(g.pool), &river.Config{
		Queues:               queues,
		Workers:              workers,
		PeriodicJobs:         periodic,
		Logger:               g.log,
		JobTimeout:           g.cfg.Agent.RunTimeout + JobSlack,
		RescueStuckJobsAfter: g.cfg.Worker.RescueAfter,
		MaxAttempts:          g.cfg.Worker.MaxAttempts,
		// River fetches at most once per cooldown per queue, so a queue of
		// short jobs (deliveries) runs at most MaxWorkers per cooldown: at
		// River's default 100 ms, 8 deliveries made 80 replies a second.
		FetchCooldown: fetchCooldown,
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: job queue: %w", err)
	}
	return client, nil
}

// Start starts the workers (if this process works any queue).
func (g *Gateway) Start(ctx context.Context) error {
	g.startLiveReplies(ctx)
	if !g.works {
		return nil
	}
	if err := g.river.Start(ctx); err != nil {
		return fmt.Errorf("gateway: start workers: %w", err)
	}
	leaseCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stopLease, g.leaseDone = stop, make(chan struct{})
	go func() { defer close(g.leaseDone); g.keepLeases(leaseCtx) }()
	if g.serves {
		g.startConnections(ctx)
		go g.scanReports(leaseCtx) // ends with the leases, at Stop
	}
	return nil
}

// Stop lets running jobs finish until ctx ends, then cancels them; an
// unfinished job is taken up again by another replica or the next start.
func (g *Gateway) Stop(ctx context.Context) error {
	defer g.mcp.Close() //nolint:errcheck // sessions to MCP servers; nothing to save
	// Deferred, so after the jobs: answers they commit meanwhile may show live.
	defer g.stopLiveReplies(ctx)
	if !g.works {
		return nil
	}
	g.stopConnections(ctx)
	if g.stopLease != nil {
		// Runs still renew their leases until they end.
		defer func() { g.stopLease(); <-g.leaseDone }()
	}
	err := g.river.Stop(ctx)
	if err != nil && ctx.Err() != nil {
		return g.river.StopAndCancel(context.WithoutCancel(ctx))
	}
	return err
}

// Handler is the HTTP handler with every callback route.
func (g *Gateway) Handler() http.Handler { return g.routes() }
