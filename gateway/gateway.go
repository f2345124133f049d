package gateway

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync"
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
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/groupcommit"
	"github.com/hermes-gw/hermes/gateway/media"
	"github.com/hermes-gw/hermes/gateway/modellimit"
	"github.com/hermes-gw/hermes/gateway/ops"
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
const JobSlack = config.JobSlack

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
	// Queues this process works, with their concurrency, when Partial.
	// Nil: the agent and delivery queues sized from Config.Worker, as a
	// full replica works them. Empty: none (insert only).
	Queues map[string]int
	// Partial: this process is not a replica of the service but a tool
	// (the CLI, `hermes chat`, `hermes doctor`): it works only Queues and
	// keeps no long connection and no scheduler. False: a full replica,
	// which works the queues of Config.Worker and so takes no Queues
	// (New refuses them with ErrQueuesNotPartial).
	Partial bool
	// Features are the parts of Hermes beside the pipeline (reports, the
	// OpenAI-compatible API, the router), wired in by cmd/hermes.
	Features []Feature
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
	*inbox            // the channels.Sink: Accept, Progress, Shown, Refused
	server     server // the HTTP routes
	cfg        *config.Config
	pool       *pgxpool.Pool
	jobs       *Jobs // the job queue: its client, which queue a job goes to
	model      agent.Model
	limiter    *modellimit.Limiter // in front of model, shared by this replica's runs
	skills     *skills.Live
	skillsFS   fs.FS // where skill definitions are (re)loaded from; nil: none
	mcp        *skills.MCPClients
	channels   map[string]channels.Channel
	replicaID  string       // this process among the replicas, for leases
	works      bool         // this process works at least one queue
	serves     bool         // a full replica: it also keeps the long connections
	pacer      pacer        // when this replica last swept the shared rate windows
	outbox     *Outbox      // the one way a reply is queued
	agent      *AgentRunner // the one way the agent runs
	features   []Feature
	running    sync.WaitGroup // the RunningFeatures' Run
	conns      connections
	live       liveReplies // live replies running here (live.go)
	delivery   delivery    // the outbox's sends (deliver.go)
	runner     runner      // the runs (process.go)
	runs       inlineRuns  // the runs started without a job (inline_run.go)
	leases     runLeases
	stopLease  context.CancelFunc // ends keepLeases
	leaseDone  chan struct{}      // closed when keepLeases returned
	now        func() time.Time
	log        *slog.Logger
	metrics    *ops.Metrics // nil when metrics.enabled is false
	tracer     trace.Tracer
	draining   atomic.Bool    // shutting down: /readyz answers 503
	connStates ops.ConnStates // for /readyz
}

// ErrQueuesNotPartial refuses Deps.Queues on a full replica: which queues
// a process works and whether it is a replica are said apart (Partial),
// so a tool that names its queues but forgets Partial would otherwise keep
// the long connections and the scheduler of a replica.
var ErrQueuesNotPartial = errors.New("gateway: Deps.Queues is set but Deps.Partial is not: a full replica works the queues of worker.*")

// New builds a gateway. It does not start workers; call Start. Errors:
// ErrQueuesNotPartial, or the config key a part of it refuses.
func New(ctx context.Context, cfg *config.Config, deps Deps) (*Gateway, error) {
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
	g.jobs.river = client
	return g, nil
}

// Check refuses a configuration New would refuse, without a database: it
// builds what New builds from cfg (the model, the skill definitions, every
// platform section's channel) and checks database.max_conns, but opens no
// connection and starts nothing. deps.Pool is not used. `hermes migrate`
// calls it, so that a config `hermes serve` refuses is refused before the
// database is touched. Errors name the key.
func Check(ctx context.Context, cfg *config.Config, deps Deps) error {
	deps.Pool = nil
	g, err := build(ctx, cfg, deps)
	if err != nil {
		return err
	}
	return g.mcp.Close()
}

// build is New without the job queue: everything a config names. Without
// deps.Pool (Check) the channels get a token cache they never use.
func build(ctx context.Context, cfg *config.Config, deps Deps) (*Gateway, error) {
	if deps.Queues != nil && !deps.Partial {
		return nil, ErrQueuesNotPartial
	}
	g := &Gateway{
		cfg:       cfg,
		pool:      deps.Pool,
		channels:  map[string]channels.Channel{},
		jobs:      &Jobs{queueFor: deps.QueueFor, exclusive: map[string]string{}},
		replicaID: ops.NewRunID(),
		now:       deps.Now,
		log:       deps.Logger,
	}
	if g.jobs.queueFor == nil {
		g.jobs.queueFor = func(string) (string, string) { return QueueAgent, QueueDelivery }
	}
	g.outbox = &Outbox{channels: g.channels, jobs: g.jobs}
	g.runner.describe, g.runner.transcribe = media.NewDescriber(cfg.Media.Describe), media.NewTranscriber(cfg.Media.Transcribe)
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	g.pacer.now, g.pacer.log = g.now, g.log

	g.tracer = ops.TracerOf(deps.Tracing)
	if cfg.Metrics.MetricsOn() {
		reg := deps.Metrics
		if reg == nil {
			reg = prometheus.NewRegistry()
		}
		g.metrics = ops.NewMetrics(reg, ops.Sources{Pool: g.pool, Now: g.now, Queues: []string{QueueAgent, QueueDelivery}, Skills: func() *skills.Registry { return g.skills.Load() }})
	}
	g.delivery = delivery{pool: g.pool, channels: g.channels, pacer: &g.pacer, metrics: g.metrics, tracer: g.tracer,
		now: g.now, log: g.log, sends: make(chan struct{}, cfg.Worker.DeliveryConcurrency)}
	g.live.cfg, g.live.pool, g.live.channels, g.live.jobs = cfg, g.pool, g.channels, g.jobs
	g.live.metrics, g.live.now, g.live.log = g.metrics, g.now, g.log
	g.conns = connections{inbox: g, cfg: cfg, pool: g.pool, channels: g.channels, jobs: g.jobs, delivery: &g.delivery, live: &g.live,
		connStates: &g.connStates, replicaID: g.replicaID, metrics: g.metrics, now: g.now, log: g.log}

	g.model = deps.Model
	if g.model == nil {
		m, err := NewModel(cfg.Model)
		if err != nil {
			return nil, err
		}
		g.model = m
	}
	g.inbox = &inbox{cfg: cfg, pool: g.pool, live: &g.live, leases: &g.leases, runs: &g.runs, jobs: g.jobs, outbox: g.outbox, tracer: g.tracer,
		metrics: g.metrics, now: g.now, log: g.log}
	g.inbox.acks = groupcommit.New(groupcommit.Config{MaxWait: cfg.Database.GroupCommit.MaxWait,
		MaxBatch: cfg.Database.GroupCommit.MaxBatch, Writers: cfg.Database.GroupCommit.Writers, GenericPlans: true}, g.pool, g.inbox.writeAccepted)
	g.limiter = modellimit.New(cfg.Model, g.pool)

	g.skillsFS = deps.SkillsFS
	if g.skillsFS == nil && cfg.Skills.Dir != "" {
		g.skillsFS = os.DirFS(cfg.Skills.Dir)
	}
	g.mcp = skills.NewMCPClients()
	g.features = deps.Features // before the skills: one may take async results
	reg, err := g.buildSkills()
	if err != nil {
		return nil, err
	}
	g.skills = skills.NewLive(reg)
	g.agent = &AgentRunner{cfg: cfg, pool: g.pool, model: g.model, limiter: g.limiter, skills: g.skills,
		features: g.features, metrics: g.metrics, now: g.now, log: g.log}
	g.runner.cfg, g.runner.pool, g.runner.channels, g.runner.skills, g.runner.features = cfg, g.pool, g.channels, g.skills, g.features
	g.runner.agent, g.runner.outbox, g.runner.jobs, g.runner.leases = g.agent, g.outbox, g.jobs, &g.leases
	g.runner.delivery = &g.delivery
	g.runs.rn, g.runs.jobs, g.runs.pool, g.runs.log = &g.runner, g.jobs, g.pool, g.log
	g.runner.tracer, g.runner.now, g.runner.log = g.tracer, g.now, g.log
	g.leases.pool, g.leases.jobs, g.leases.replicaID, g.leases.term = g.pool, g.jobs, g.replicaID, cfg.Worker.RunLease
	g.leases.now, g.leases.log = g.now, g.log
	if err := reg.CheckEnv(); err != nil {
		// Not fatal: a secret may be provided later; calls fail closed until then.
		g.log.Warn("skills: secrets missing; these skills will refuse to run", "err", err)
	}

	if err := g.buildChannels(ctx, deps.Platforms, deps.Channels); err != nil {
		return nil, err
	}
	g.server = server{cfg: cfg, pool: g.pool, channels: g.channels, inbox: g, features: g.features, metrics: g.metrics,
		draining: &g.draining, connStates: &g.connStates, log: g.log}
	for _, f := range g.features {
		if err := f.Attach(g.Services()); err != nil {
			return nil, err
		}
	}

	if need, have := g.connsNeeded(deps), poolConns(cfg, deps); have < need {
		return nil, fmt.Errorf("config: database.max_conns: %d connections are too few; need at least %d (worker.delivery_concurrency + %d)",
			have+store.ReservedConns, need+store.ReservedConns, minSpareConns+store.ReservedConns)
	}
	return g, nil
}

// poolConns are the connections the pool holds: deps.Pool's, or without
// one those store.Open would give it for database.max_conns.
func poolConns(cfg *config.Config, deps Deps) int32 {
	if deps.Pool != nil {
		return deps.Pool.Config().MaxConns
	}
	return cfg.Database.MaxConns - store.ReservedConns
}

// NewModel builds the model a config names.
func NewModel(cfg config.ModelConfig) (agent.Model, error) {
	switch cfg.Provider {
	case "offline":
		return agent.OfflineModel{}, nil
	case "openai", "":
		return agent.NewOpenAIModel(agent.OpenAIConfig{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTPClient: modellimit.HTTPClient(cfg)}), nil
	default:
		return nil, fmt.Errorf("config: model.provider: unknown provider %q", cfg.Provider)
	}
}

// buildSkills loads the skill definitions into a new registry wired to
// this gateway (the feature taking async results, shared MCP sessions).
func (g *Gateway) buildSkills() (*skills.Registry, error) {
	// Nil when no feature does it: such skills are then misconfigured.
	async, _ := FeatureOf[AsyncFeature](g.features)
	files, _ := FeatureOf[FileFeature](g.features)
	opts := skills.Options{
		BaseURL:          g.cfg.Skills.BaseURL,
		Now:              g.now,
		Async:            async,
		Files:            files,
		CommandAllowList: g.cfg.Skills.CommandAllowList,
		MCP:              g.mcp,
		Logger:           g.log,
		OnBreakerChange:  store.NewBreakerRecorder(g.pool, g.log).Record,
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

// nonceSweepInterval is how often expired nonce claims are forgotten.
const nonceSweepInterval = 30 * time.Second

// fetchCooldown spaces a queue's fetches (a queue of n workers starts at
// most n jobs per cooldown) and River's insert notifications per queue.
const fetchCooldown = 5 * time.Millisecond

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
	river.AddWorker(workers, &processWorker{rn: &g.runner, runs: &g.runs})
	river.AddWorker(workers, &deliverWorker{d: &g.delivery, live: &g.live})
	river.AddWorker(workers, &forgetNoncesWorker{pool: g.pool, now: g.now})
	river.AddWorker(workers, &purgeMediaWorker{pool: g.pool, retention: g.cfg.Media.Retention, now: g.now, log: g.log})
	for _, f := range g.features {
		if jf, ok := f.(JobFeature); ok {
			jf.AddWorkers(workers)
		}
	}

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
		// The leader forgets the nonce claims that have expired.
		periodic = append(periodic, LeaderJob(nonceSweepInterval, forgetNoncesArgs{}),
			// and purges attachments past media.retention.
			LeaderJob(mediaPurgeInterval, purgeMediaArgs{}))
		for _, f := range g.features {
			if jf, ok := f.(JobFeature); ok {
				periodic = append(periodic, jf.PeriodicJobs()...)
			}
		}
	}
	g.serves = !deps.Partial
	g.leases.sweeps = g.serves
	if n := queueSizes[QueueAgent]; g.serves && n > 0 {
		g.runs.slots = make(chan struct{}, n)
	}
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
	// The jobs and the live replies end in Stop, not with ctx: river cancels
	// its running jobs when the context of Start ends, and a SIGTERM must
	// let them finish within the grace (a model call cancelled there is
	// paid for again by the replica that takes the message up).
	g.live.startLiveReplies(context.WithoutCancel(ctx))
	if !g.works {
		return nil
	}
	if err := g.jobs.river.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("gateway: start workers: %w", err)
	}
	leaseCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stopLease, g.leaseDone = stop, make(chan struct{})
	go func() { defer close(g.leaseDone); g.leases.keepLeases(leaseCtx) }()
	g.runs.start(context.WithoutCancel(ctx))
	if g.serves {
		g.conns.startConnections(ctx)
		for _, f := range g.features {
			if rf, ok := f.(RunningFeature); ok {
				g.running.Add(1)
				go func() { defer g.running.Done(); rf.Run(leaseCtx) }()
			}
		}
	}
	return nil
}

// Stop lets running jobs finish until ctx ends, then cancels them; an
// unfinished job is taken up again by another replica or the next start.
func (g *Gateway) Stop(ctx context.Context) error {
	defer g.mcp.Close() //nolint:errcheck // sessions to MCP servers; nothing to save
	defer g.inbox.acks.Stop()
	// Deferred, so after the jobs: answers they commit meanwhile may show live.
	defer g.live.stopLiveReplies(ctx)
	if !g.works {
		return nil
	}
	g.conns.stopConnections(ctx)
	if g.stopLease != nil {
		// Runs still renew their leases until they end; the features'
		// own work ends with them.
		defer func() { g.stopLease(); <-g.leaseDone; g.running.Wait() }()
	}
	g.runs.stop(ctx)
	err := g.jobs.river.Stop(ctx)
	if err != nil && ctx.Err() != nil {
		return g.jobs.river.StopAndCancel(context.WithoutCancel(ctx))
	}
	return err
}

// Handler is the HTTP handler with every callback route.
func (g *Gateway) Handler() http.Handler { return g.server.routes() }
