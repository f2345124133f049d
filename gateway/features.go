package gateway

import (
	"context"
	"encoding/json"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"github.com/hermes-gw/hermes/agent"
	"github.com/hermes-gw/hermes/channels"
	"github.com/hermes-gw/hermes/gateway/config"
	"github.com/hermes-gw/hermes/gateway/ops"
	"github.com/hermes-gw/hermes/skills"
)

// A Feature is a part of Hermes beside the pipeline: scheduled reports,
// the OpenAI-compatible API, the tool router. It lives in a package of
// its own, depends on the Services the pipeline offers and nothing else of
// the gateway, and is wired in by cmd/hermes through Deps.Features. What a
// feature does beyond Attach it says by implementing the optional
// interfaces below.
type Feature interface {
	// Attach hands the feature the pipeline's services, once, while the
	// gateway is built (before its job queue: a JobFeature's workers are
	// registered after). An error stops the build.
	Attach(s Services) error
}

// JobFeature runs jobs of its own in the gateway's job queue.
type JobFeature interface {
	Feature
	// AddWorkers registers the feature's job workers.
	AddWorkers(w *river.Workers)
	// PeriodicJobs are the feature's periodic jobs, run by the leader of
	// the replicas that work the delivery queue.
	PeriodicJobs() []*river.PeriodicJob
}

// RouteFeature answers HTTP requests.
type RouteFeature interface {
	Feature
	// Routes mounts the feature's endpoints: public ones on the callback
	// listener, admin ones where only operators reach (server.admin_listen,
	// else the same listener).
	Routes(public, admin gin.IRouter)
}

// RunningFeature keeps work of its own going on a full replica (one that
// also keeps the long connections), e.g. a scheduler.
type RunningFeature interface {
	Feature
	// Run works until ctx ends; the gateway waits for it at Stop.
	Run(ctx context.Context)
}

// ChatToolFeature offers tools in chat beside the skills (the reports'
// report_* tools), bound to the verified sender of the message.
type ChatToolFeature interface {
	Feature
	// ChatTools are the tools offered for a message in.
	ChatTools(in channels.Inbound) []skills.Tool
	// CallConfirmed runs a call of one of its tools the user confirmed
	// (「确认」); handled is false when tool is not one of the feature's.
	CallConfirmed(ctx context.Context, in channels.Inbound, caller skills.Caller, tool string, args json.RawMessage) (res skills.Result, handled bool, err error)
}

// ReplyFeature adds to a chat run's answer what Hermes itself says, not
// the model (the knowledge base's sources).
type ReplyFeature interface {
	Feature
	// Annotate is the reply to in once its run answered reply (no
	// error), and the steps it adds to the run's trace (what Hermes did
	// after the model: the passages retrieved and cited). ctx bounds what
	// it records besides.
	Annotate(ctx context.Context, in channels.Inbound, reply string) (string, []agent.Step)
}

// AsyncFeature takes the late results of async skill calls (the tool
// router's /v1/async): the skill registry, built before the features
// attach, asks it for each async call's callback URL, which it answers
// only once attached.
type AsyncFeature interface {
	Feature
	skills.AsyncRegistrar
}

// CommandFeature answers chat commands of its own (memory's 「记住…」,
// a rating's 👍) before any run: such a message and its answer are not
// conversation, so neither becomes history the model reads again.
type CommandFeature interface {
	Feature
	// Command answers in, stored as inboundID, if it is one of the
	// feature's commands; handled is false for any other text.
	Command(ctx context.Context, in channels.Inbound, inboundID int64) (reply string, handled bool, err error)
	// Help is the feature's line of /help in a chat of account, "" where
	// the feature is off there.
	Help(account, chatID string) string
	// Private says the command's text is not kept once answered (what a
	// memory command said is in memories, or was refused as a secret).
	Private() bool
}

// MemoryFeature remembers each employee across sessions (gateway/memory):
// it answers its own commands, gives a run the notes that bear on the
// message, and learns from each answer once it is committed.
type MemoryFeature interface {
	CommandFeature
	// Notes are the sender's memories that bear on text, for the prompt
	// (agent.Turn.Notes); no items when none do.
	Notes(ctx context.Context, in channels.Inbound, text string) agent.Notes
	// LearnTx queues learning from the answer to inboundID (run runID,
	// "" for none), in the transaction that commits it.
	LearnTx(ctx context.Context, tx pgx.Tx, in channels.Inbound, inboundID int64, runID string) error
}

// FileFeature hands skills that take files (files: true) their URLs:
// the skill registry asks it at each such call.
type FileFeature interface {
	Feature
	skills.FileIssuer
}

// Services are what the pipeline offers a feature: its stores, its clock,
// its channels, the one outbox and the one way to run the agent.
type Services struct {
	Config *config.Config
	Pool   *pgxpool.Pool
	Now    func() time.Time
	Log    *slog.Logger
	// Skills is the live skill registry (reloaded on SIGHUP).
	Skills *skills.Live
	// SkillsFS is the folder the skill definitions are loaded from (nil:
	// none), for `hermes skills check`; ReloadSkills makes a new set of
	// them current, refusing a broken one, as SIGHUP does.
	SkillsFS     fs.FS
	ReloadSkills func() error
	// Channel is the channel of a platform name, if configured.
	Channel func(name string) (channels.Channel, bool)
	// Channels are every channel, by name; Callbacks the paths they take
	// callbacks on (POST, on the public listener), sorted.
	Channels  []channels.Channel
	Callbacks []string
	// Outbox is the one way anything produces a reply.
	Outbox *Outbox
	// Agent runs the agent for a caller as a chat message's run is run.
	Agent *AgentRunner
	// Jobs inserts the feature's own jobs.
	Jobs *Jobs
	// Departments are a user's departments as the channel's directory
	// knows them now (none on a channel without one).
	Departments func(ctx context.Context, channel, account, user string) ([]string, error)
	// Tracer starts the feature's spans (ops.StartRunSpan for a run's
	// root); a no-op when tracing is off.
	Tracer trace.Tracer
	// Metrics records into the gateway's metrics; nil when they are off
	// (a nil *ops.Metrics records nothing).
	Metrics *ops.Metrics
}

// Services are what this gateway offers its features, and `hermes
// doctor` its channels and skills.
func (g *Gateway) Services() Services {
	list := slices.SortedFunc(maps.Values(g.channels), func(a, b channels.Channel) int { return strings.Compare(a.Name(), b.Name()) })
	return Services{
		Config: g.cfg, Pool: g.pool, Now: g.now, Log: g.log,
		Skills: g.skills, SkillsFS: g.skillsFS, ReloadSkills: g.ReloadSkills,
		Channel: func(name string) (channels.Channel, bool) {
			ch, ok := g.channels[name]
			return ch, ok
		},
		Channels: list, Callbacks: callbackPaths(g.server.channelRoutes()),
		Outbox: g.outbox, Agent: g.agent, Jobs: g.jobs,
		Departments: func(ctx context.Context, channel, account, user string) ([]string, error) {
			return departmentsOf(ctx, g.channels, channel, account, user)
		},
		Tracer: g.tracer, Metrics: g.metrics,
	}
}

// annotate passes a chat run's answer to in through every ReplyFeature
// of fs, and gathers the trace steps they add.
func annotate(ctx context.Context, fs []Feature, in channels.Inbound, reply string) (string, []agent.Step) {
	var steps []agent.Step
	for _, f := range fs {
		if rf, ok := f.(ReplyFeature); ok {
			var added []agent.Step
			reply, added = rf.Annotate(ctx, in, reply)
			steps = append(steps, added...)
		}
	}
	return reply, steps
}

// commandFeatures are the CommandFeatures of fs, in their order.
func commandFeatures(fs []Feature) []CommandFeature {
	var out []CommandFeature
	for _, f := range fs {
		if cf, ok := f.(CommandFeature); ok {
			out = append(out, cf)
		}
	}
	return out
}

// featureRoutes mounts every feature's endpoints: public ones on public,
// admin ones on admin (either may be a router whose routes nobody serves).
func (sv *server) featureRoutes(public, admin gin.IRouter) {
	for _, f := range sv.features {
		if rf, ok := f.(RouteFeature); ok {
			rf.Routes(public, admin)
		}
	}
}

// FeatureOf is the feature of type T among fs, and whether there is one:
// how cmd/hermes and the tests reach a feature's own API (the reports
// service) in the list they wired.
func FeatureOf[T Feature](fs []Feature) (T, bool) {
	for _, f := range fs {
		if t, ok := f.(T); ok {
			return t, true
		}
	}
	var none T
	return none, false
}
