package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// JobSlack is the time a job gets beyond the agent's run budget for loading
// and storing; River cancels a job's context after RunTimeout + JobSlack.
// worker.rescue_after must exceed both.
const JobSlack = 15 * time.Second

// Config is the whole hermes configuration. Every key is documented, with
// its default, in hermes.example.yaml at the repository root.
type Config struct {
	Server   ServerConfig   `yaml:"server"`
	Database DatabaseConfig `yaml:"database"`
	Model    ModelConfig    `yaml:"model"`
	Agent    AgentConfig    `yaml:"agent"`
	Skills   SkillsConfig   `yaml:"skills"`
	Worker   WorkerConfig   `yaml:"worker"`
	Groups   GroupsConfig   `yaml:"groups"`
	Router   RouterConfig   `yaml:"router"`
	Messages Messages       `yaml:"messages"`
	Reports  ReportsConfig  `yaml:"reports"`
	Media    MediaConfig    `yaml:"media"`
	Memory   MemoryConfig   `yaml:"memory"`
	Privacy  PrivacyConfig  `yaml:"privacy"`
	Costs    CostsConfig    `yaml:"costs"`
	Alerts   AlertsConfig   `yaml:"alerts"`
	Ratings  RatingsConfig  `yaml:"ratings"`
	// Operations: metrics, tracing, log, openai_api (config_ops.go).
	OpsConfig `yaml:",inline"`

	// Knowledge is the company's documents the agent searches (knowledge:).
	Knowledge KnowledgeConfig `yaml:"knowledge"`

	// Platforms are the sections of the chat platforms (wecom, dingtalk,
	// ...), each decoded and validated by its own package when the gateway
	// is built; a key no registered platform claims is an error then.
	Platforms map[string]yaml.Node `yaml:",inline"`
}

// GroupsConfig says when the bot answers in group chats. Direct chats are
// always answered.
type GroupsConfig struct {
	// The policy of every account and chat not listed below.
	GroupPolicy `yaml:",inline"`
	// Accounts override it per app or bot name.
	Accounts map[string]GroupPolicy `yaml:"accounts"`
	// Chats override it per chat id (over the account's policy).
	Chats map[string]GroupPolicy `yaml:"chats"`
}

// GroupPolicy is when a group message is for the bot.
type GroupPolicy struct {
	// RequireMention: answer only messages that @-mention the bot, or that
	// start with one of Prefixes. Default true.
	RequireMention *bool `yaml:"require_mention"`
	// Prefixes that address the bot without a mention, e.g. ["/ai"]. The
	// prefix is removed before the model sees the text.
	Prefixes []string `yaml:"prefixes"`
}

// ServerConfig is the HTTP listener for platform callbacks.
type ServerConfig struct {
	Listen string `yaml:"listen"` // address, default ":8080"
	// PublicURL is how skill backends reach this server, e.g.
	// https://hermes.example.com; async skills get callback URLs under it.
	// Required when an async skill is configured.
	PublicURL string `yaml:"public_url"`
	// CallbackKey signs the single-use tokens of async callback URLs. All
	// replicas need the same one; use ${ENV}. Required with public_url.
	CallbackKey string `yaml:"callback_key"`
	// AdminListen is a second address, for what only operators need: the
	// console (/console), /metrics and the status page (/). Empty (the
	// default): they are served on listen with everything else. Set, they
	// are served only here and are 404 on listen, which keeps the platform
	// callbacks, /v1/... and /healthz, /readyz. E.g. "127.0.0.1:9090".
	AdminListen string `yaml:"admin_listen"`
	// ReadTimeout bounds reading one whole request, headers and body, from
	// its first byte, default 10s: callbacks are small and the platforms
	// give up after 3-5 s. It never cuts a response (a stream, a long run).
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request, default 60s.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// DrainDelay is how long, after SIGTERM, /readyz answers 503 while
	// every listener still serves, so that a load balancer sees the
	// replica leave before its listener closes, default 5s (a balancer
	// probing every 2 s needs two failed probes).
	DrainDelay time.Duration `yaml:"drain_delay"`
	// ShutdownGrace is how long, after the drain, requests and jobs in
	// flight may run to their end before they are cancelled (and the
	// jobs handed to another replica), default 30s.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
}

// DatabaseConfig is the Postgres connection.
type DatabaseConfig struct {
	URL string `yaml:"url"` // required, e.g. postgres://hermes@127.0.0.1:5432/hermes
	// MaxConns is every Postgres connection one replica may open (the job
	// queue's listener and the session leases' own included), default 20.
	// Runs hold a connection only for short transactions, so it does not
	// grow with worker.agent_concurrency; at least delivery_concurrency + 10.
	MaxConns int32 `yaml:"max_conns"`
	// GroupCommit shares the ack path's transactions (database.go).
	GroupCommit GroupCommitConfig `yaml:"group_commit"`
}

// ModelConfig selects the OpenAI-compatible model endpoint.
type ModelConfig struct {
	Provider string        `yaml:"provider"` // "openai" (any compatible endpoint, default) or "offline" (built-in demo model)
	BaseURL  string        `yaml:"base_url"` // e.g. https://api.deepseek.com/v1; required for "openai"
	APIKey   string        `yaml:"api_key"`  // use ${ENV}; may be empty for local vLLM/Ollama
	Name     string        `yaml:"name"`     // model name, required for "openai"
	Timeout  time.Duration `yaml:"timeout"`  // per model call, default 60s
	// LimitsScope is who shares max_concurrent, requests_per_minute,
	// tokens_per_minute and a 429's Retry-After: "replica" (the default),
	// each replica has its own, so n replicas together may make n times
	// them; "shared", every replica on this database counts against the
	// same ones, kept in Postgres (gateway/modellimit), at two short
	// queries per model call.
	LimitsScope string `yaml:"limits_scope"`
	// MaxConcurrent is how many calls to the model may be in flight at
	// once (per replica, or in all, as limits_scope says); further calls
	// wait their turn. Default 100; at most 10000 when shared.
	MaxConcurrent int `yaml:"max_concurrent"`
	// RequestsPerMinute and TokensPerMinute cap calls started per minute
	// and their tokens (prompt estimated before the call, corrected by the
	// usage the model reports), per limits_scope. Default 0: no cap.
	RequestsPerMinute int `yaml:"requests_per_minute"`
	TokensPerMinute   int `yaml:"tokens_per_minute"`
	// MaxRetryAfter bounds how long a 429 answer's Retry-After holds back
	// the calls to the model (this replica's, or every replica's when
	// limits_scope is shared), default 30s.
	MaxRetryAfter time.Duration `yaml:"max_retry_after"`
	// Vision: the model accepts images as content parts (an
	// OpenAI-compatible vision model: GPT-4o, Qwen-VL, GLM-4V, ...).
	// Default false: an image is answered with messages.media.needs_vision.
	Vision bool `yaml:"vision"`
	// QueuedHintAfter: a run that has waited this long for its turn at
	// the model shows messages.queued on platforms that show an answer
	// while it grows. Default 3s.
	QueuedHintAfter time.Duration `yaml:"queued_hint_after"`
}

// AgentConfig are the agent's budgets.
type AgentConfig struct {
	SystemPrompt string        `yaml:"system_prompt"` // default: a short Chinese assistant prompt
	MaxSteps     int           `yaml:"max_steps"`     // model calls per run, default 6
	RunTimeout   time.Duration `yaml:"run_timeout"`   // wall clock per run, default 90s
	HistoryTurns int           `yaml:"history_turns"` // earlier turns (user+assistant pairs) loaded, default 10
	HistoryIdle  time.Duration `yaml:"history_idle"`  // a session idle this long starts without history, default 2h
	// Plan turns a request into goal, constraints, output format and
	// subtasks first (one more model call per message). Default false.
	Plan bool `yaml:"plan"`
	// ConfirmTimeout is how long a skill call waits for the user's 「确认」, default 5m.
	ConfirmTimeout time.Duration `yaml:"confirm_timeout"`
	// FollowupTimeout is how long a task waits for the answer to a skill's question, default 30m.
	FollowupTimeout time.Duration `yaml:"followup_timeout"`
}

// SkillsConfig says where skill definitions live and where their relative
// endpoints point.
type SkillsConfig struct {
	Dir     string `yaml:"dir"`      // folder of <skill>/SKILL.md; empty: no skills
	BaseURL string `yaml:"base_url"` // base for endpoints given as paths
	// AsyncTimeout is how long an async skill's result may take before the
	// user is told it timed out, default 30m.
	AsyncTimeout time.Duration `yaml:"async_timeout"`
	// CommandAllowList are the absolute paths command skills may run.
	CommandAllowList []string `yaml:"command_allow_list"`
	// ChatSkills binds skills to chats: chat id → skill names offered on
	// every turn there, whatever their triggers (access rules still apply).
	ChatSkills map[string][]string `yaml:"chat_skills"`
	// IdentityKey is the default key that signs the caller's identity for
	// skills without a key of their own: an environment variable or a
	// secret file, read at every call. Without it such a skill does not
	// load unless it says identity: none. Default: none.
	IdentityKey SecretRef `yaml:"identity_key"`
}

// SecretRef names where a secret lives, never the secret: one of an
// environment variable and an absolute file path.
type SecretRef struct {
	Env  string `yaml:"env"`  // variable name, e.g. HERMES_IDENTITY_KEY
	File string `yaml:"file"` // or a file, e.g. /run/secrets/hermes_identity_key
}

// RouterConfig is the tool-router API (POST /v1/route).
type RouterConfig struct {
	// APIKeys map each caller system's key to the identity skills run as.
	// No keys: the API answers 404.
	APIKeys []RouterKey `yaml:"api_keys"`
	// MaxToolCalls caps the tool calls of one request, default 16; more is
	// refused with 400 before any runs.
	MaxToolCalls int `yaml:"max_tool_calls"`
	// RatePerMinute is how many requests one key may make per minute on
	// each replica (a token bucket as large as a minute's worth), default
	// 60; more are answered 429 with Retry-After.
	RatePerMinute int `yaml:"rate_per_minute"`
}

// RouterKey is one API key of the tool-router API.
type RouterKey struct {
	Key    string `yaml:"key"`     // required, use ${ENV}; sent as "Authorization: Bearer <key>"
	UserID string `yaml:"user_id"` // required: the identity the calls run as
	Name   string `yaml:"name"`    // display name
	CorpID string `yaml:"corp_id"` // corp of that identity
}

// WorkerConfig sizes the job queue.
type WorkerConfig struct {
	// AgentConcurrency is how many agent runs one replica keeps in flight,
	// default 200. A run waiting on the model or a skill holds no database
	// connection, so this can be in the thousands; model.max_concurrent
	// protects the model.
	AgentConcurrency    int `yaml:"agent_concurrency"`
	DeliveryConcurrency int `yaml:"delivery_concurrency"` // sends at once per replica, default 8
	MaxAttempts         int `yaml:"max_attempts"`         // tries of a delivery before giving up, default 8
	// RescueAfter is how long a job may stay running before it is presumed
	// crashed (its process died) and run again by any replica. Default
	// agent.run_timeout + 75s; must exceed agent.run_timeout + 15s.
	RescueAfter time.Duration `yaml:"rescue_after"`
	// ProcessingHintAfter: a run still going after this long sends
	// messages.processing once, on channels that cannot show progress
	// otherwise. Default 5s.
	ProcessingHintAfter time.Duration `yaml:"processing_hint_after"`
	// DraftInterval is how often a streamed answer's draft is stored for
	// platforms that show it while it grows (WeCom AI bot). Default 300ms.
	DraftInterval time.Duration `yaml:"draft_interval"`
	// ConnectionLease is how long a replica holds a long connection that the
	// platform allows once per bot (WeCom AI bot) without renewing it: when
	// that replica dies, another takes over within about this long plus a
	// quarter. Default 20s.
	ConnectionLease time.Duration `yaml:"connection_lease"`
	// RunLease is how long a run's hold on its session lasts without
	// renewal. The replica renews it three times per term; when the
	// replica dies, any replica answers the message again within about
	// 1.25 × this. Default 10s, at least 1s.
	RunLease time.Duration `yaml:"run_lease"`
}

// Default values, applied by applyDefaults.
const (
	defaultListen          = ":8080"
	defaultMaxConns        = 20
	defaultModelTimeout    = 60 * time.Second
	defaultMaxSteps        = 6
	defaultRunTimeout      = 90 * time.Second
	defaultHistoryTurns    = 10
	defaultHistoryIdle     = 2 * time.Hour
	defaultConfirmTimeout  = 5 * time.Minute
	defaultFollowupTimeout = 30 * time.Minute
	defaultAsyncTimeout    = 30 * time.Minute
	defaultConcurrency     = 8
	// Runs waiting on the model hold no connection; goroutines are cheap.
	defaultAgentConcurrency = 200
	defaultModelConcurrency = 100
	defaultMaxRetryAfter    = 30 * time.Second
	defaultQueuedHintAfter  = 3 * time.Second
	// A dead replica's runs are taken up within about 1.25 × this.
	defaultRunLease    = 10 * time.Second
	defaultMaxAttempts = 8
	// A run that takes longer than this gets a 「处理中…」 on channels
	// that cannot show progress.
	defaultProcessingHintAfter = 5 * time.Second
	// How often a streamed answer's draft is written for the platforms
	// that show it while it grows.
	defaultDraftInterval = 300 * time.Millisecond
	// A replica holding a one-per-bot connection renews its lease three
	// times per term; a dead one's lease lapses after this.
	defaultConnectionLease = 20 * time.Second
	defaultSystemPrompt    = "你是公司内部的智能助手 Hermes。用简洁的中文回答员工的问题；需要查询公司系统时调用提供的工具，不要编造数据；不知道就直说。"
)

// LoadConfig reads a YAML file, expands ${ENV} references in values, applies
// defaults and validates. Errors name the offending key.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(data, os.LookupEnv)
}

// ParseConfig is LoadConfig over bytes with an injectable environment.
func ParseConfig(data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := expandEnv(&root, lookupEnv); err != nil {
		return nil, err
	}
	expanded, err := yaml.Marshal(&root)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var cfg Config
	dec := yaml.NewDecoder(bytes.NewReader(expanded))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config: %s", cleanYAMLError(err))
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandEnv replaces ${NAME} and ${NAME:-default} in scalar values (not
// keys), after parsing, so a secret's characters cannot change the YAML's
// structure.
func expandEnv(n *yaml.Node, lookupEnv func(string) (string, bool)) error {
	if n.Kind == yaml.ScalarNode {
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(ref string) string {
			m := envRef.FindStringSubmatch(ref)
			if v, ok := lookupEnv(m[1]); ok && v != "" {
				return v
			}
			return m[3]
		})
		if n.Tag == "!!null" && n.Value != "" && n.Value != "~" && n.Value != "null" {
			n.Tag = "!!str"
		}
		return nil
	}
	for i, c := range n.Content {
		if n.Kind == yaml.MappingNode && i%2 == 0 {
			continue // a key
		}
		if err := expandEnv(c, lookupEnv); err != nil {
			return err
		}
	}
	return nil
}

var unknownField = regexp.MustCompile(`field (\S+) not found in type \w+\.(\S+)`)

// cleanYAMLError turns yaml.v3's "field x not found in type gateway.Y" into
// a message an operator can act on.
func cleanYAMLError(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = unknownField.ReplaceAllString(msg, "unknown key $1 (in $2)")
	return strings.TrimSpace(msg)
}

// ApplyDefaults fills every unset key with its default.
func (c *Config) ApplyDefaults() {
	setDefault(&c.Server.Listen, defaultListen)
	c.Server.ApplyTimeoutDefaults()
	positive(&c.Database.MaxConns, defaultMaxConns)
	c.Database.GroupCommit.applyDefaults()
	setDefault(&c.Model.Provider, "openai")
	positive(&c.Model.Timeout, defaultModelTimeout)
	setDefault(&c.Agent.SystemPrompt, defaultSystemPrompt)
	positive(&c.Agent.MaxSteps, defaultMaxSteps)
	positive(&c.Agent.RunTimeout, defaultRunTimeout)
	positive(&c.Agent.HistoryTurns, defaultHistoryTurns)
	positive(&c.Agent.HistoryIdle, defaultHistoryIdle)
	positive(&c.Model.MaxConcurrent, defaultModelConcurrency)
	positive(&c.Model.MaxRetryAfter, defaultMaxRetryAfter)
	positive(&c.Model.QueuedHintAfter, defaultQueuedHintAfter)
	setDefault(&c.Model.LimitsScope, LimitsReplica)
	positive(&c.Worker.AgentConcurrency, defaultAgentConcurrency)
	positive(&c.Worker.RunLease, defaultRunLease)
	positive(&c.Worker.DeliveryConcurrency, defaultConcurrency)
	positive(&c.Worker.MaxAttempts, defaultMaxAttempts)
	positive(&c.Worker.RescueAfter, c.Agent.RunTimeout+JobSlack+time.Minute)
	positive(&c.Worker.ProcessingHintAfter, defaultProcessingHintAfter)
	positive(&c.Worker.DraftInterval, defaultDraftInterval)
	positive(&c.Worker.ConnectionLease, defaultConnectionLease)
	positive(&c.Agent.ConfirmTimeout, defaultConfirmTimeout)
	positive(&c.Agent.FollowupTimeout, defaultFollowupTimeout)
	positive(&c.Skills.AsyncTimeout, defaultAsyncTimeout)
	c.Reports.applyDefaults()
	c.Alerts.applyDefaults()
	c.Media.applyDefaults()
	c.Media.Describe.inherit(c.Model)
	c.Media.Transcribe.inherit(c.Model)
	c.Memory.applyDefaults()
	c.Memory.Embeddings.inherit(c.Model)
	c.Knowledge.applyDefaults(c.Memory.Embeddings, c.Model)
	c.Privacy.applyDefaults()
	c.OpsConfig.applyDefaults()
	c.Messages.applyDefaults()
}

// positive sets *p to def unless it is already above zero.
func positive[T int | int32 | time.Duration](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}

func setDefault(p *string, v string) {
	if strings.TrimSpace(*p) == "" {
		*p = v
	}
}

// Validate checks every key and reports all problems at once, each naming
// its key, e.g. "wecom.apps[0].corp_id: required".
func (c *Config) Validate() error {
	var errs []string
	bad := func(key, format string, args ...any) {
		errs = append(errs, key+": "+fmt.Sprintf(format, args...))
	}
	if c.Database.URL == "" {
		bad("database.url", "required (set it or DATABASE_URL)")
	}
	switch c.Model.Provider {
	case "openai":
		if c.Model.BaseURL == "" {
			bad("model.base_url", "required for provider openai (or set model.provider: offline)")
		} else if !isHTTPURL(c.Model.BaseURL) {
			bad("model.base_url", "must be an http(s) URL, got %q", c.Model.BaseURL)
		}
		if c.Model.Name == "" {
			bad("model.name", "required for provider openai")
		}
	case "offline":
	default:
		bad("model.provider", "must be openai or offline, got %q", c.Model.Provider)
	}
	if c.Skills.BaseURL != "" && !isHTTPURL(c.Skills.BaseURL) {
		bad("skills.base_url", "must be an http(s) URL, got %q", c.Skills.BaseURL)
	}
	if c.Skills.Dir != "" {
		if st, err := os.Stat(c.Skills.Dir); err != nil || !st.IsDir() {
			bad("skills.dir", "%q is not a readable folder", c.Skills.Dir)
		}
	}
	if c.Worker.RescueAfter <= c.Agent.RunTimeout+JobSlack {
		bad("worker.rescue_after", "must exceed agent.run_timeout + %s (%s), got %s", JobSlack, c.Agent.RunTimeout+JobSlack, c.Worker.RescueAfter)
	}
	if c.Worker.RunLease < time.Second {
		bad("worker.run_lease", "must be at least 1s, got %s", c.Worker.RunLease)
	}
	c.Model.validateLimits(bad)
	if c.Server.PublicURL != "" {
		if !isHTTPURL(c.Server.PublicURL) {
			bad("server.public_url", "must be an http(s) URL, got %q", c.Server.PublicURL)
		}
		if len(c.Server.CallbackKey) < 16 {
			bad("server.callback_key", "required with server.public_url, at least 16 characters")
		}
	}
	if a := c.Server.AdminListen; a != "" {
		if _, _, err := net.SplitHostPort(a); err != nil {
			bad("server.admin_listen", "must be host:port or :port, got %q", a)
		} else if a == c.Server.Listen {
			bad("server.admin_listen", "must differ from server.listen (%s)", a)
		}
	}
	c.Server.validateTimeouts(bad)
	c.Database.GroupCommit.validate(c.Database.MaxConns, bad)
	for i, p := range c.Skills.CommandAllowList {
		if !strings.HasPrefix(p, "/") {
			bad(fmt.Sprintf("skills.command_allow_list[%d]", i), "must be an absolute path, got %q", p)
		}
	}
	c.Reports.validate(bad)
	c.Alerts.validate(c.Costs.Budgets, bad)
	c.Media.validate(bad)
	c.Memory.Embeddings.validate(bad)
	c.Knowledge.validate(bad)
	c.Privacy.validate(bad)
	c.Costs.validate(bad)
	c.Messages.validate(bad)
	checkAPIKeys(bad, "router.api_keys", len(c.Router.APIKeys), func(i int) (string, string) {
		return c.Router.APIKeys[i].Key, c.Router.APIKeys[i].UserID
	})
	c.OpsConfig.validate(bad)
	if len(errs) > 0 {
		return fmt.Errorf("config: %s", strings.Join(errs, "; "))
	}
	return nil
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// DecodeSection decodes a platform's section strictly: an unknown key is
// an error naming it.
func DecodeSection(key string, n *yaml.Node) func(any) error {
	return func(v any) error {
		data, err := yaml.Marshal(n)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("%s: %s", key, cleanYAMLError(err))
		}
		return nil
	}
}
