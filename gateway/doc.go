// Package gateway is Hermes' message pipeline: the inbox that stores a
// verified platform message with the job that answers it in one
// transaction (so a callback is acknowledged only once nothing can lose
// it), the workers that run the agent one session at a time under a
// lease, the live replies and drafts that show an answer while it grows,
// and the outbox that delivers each reply exactly once, in its
// conversation's order. It is the pipeline only: it imports no platform
// (channels/<platform>, registered in cmd/hermes) and no feature (reports,
// the OpenAI-compatible API, the tool router, skills' file URLs, long-term
// memory and the operators' pages attach through the interfaces of
// features.go); its SQL is gateway/store,
// its configuration and words gateway/config, its metrics, traces and
// health checks gateway/ops. Everything a message's fate depends on is in
// Postgres, never only in one replica's memory.
//
// The stages. Each is a type with explicit fields for exactly what it
// uses, built once in New; none holds the Gateway or a stage upstream of
// it (a message flows inbox → runs → outbox → delivery; the connections
// and the HTTP server feed the inbox through channels.Sink). Gateway only
// assembles them (gateway.go), starts and stops them, and embeds the
// inbox, which is the channels.Sink the platforms get.
//
//	stage                  file(s)                              holds
//	inbox                  inbox.go, cards.go (acceptClick)     config, pool, the ack path's group commit, live replies, leases (for the job), Jobs, Outbox (a card's update), tracer, metrics
//	runner (the runs)      process.go, commands.go, pending.go, config, pool, channels, skills, features, AgentRunner, Outbox, Jobs, leases, tracer
//	                       attachments.go, drafts.go, cards.go
//	runLeases              leases_run.go                        pool, Jobs, replica id, lease term, whether it sweeps
//	AgentRunner            agentrun.go                          config, pool, model and its limiter, skills, features, metrics
//	Outbox                 outbox.go                            channels, Jobs
//	Jobs (the job queue)   jobs.go                              the River client, which queue a channel's (and an exclusive account's) jobs go to
//	delivery and pacer     deliver.go, pacing.go, cards_deliver.go                pool, channels, pacer, metrics, tracer
//	liveReplies            live.go                              config, pool, channels, Jobs, metrics
//	connections            connections.go                       the inbox (a channels.Sink), config, pool, channels, Jobs, delivery, live replies, connection states
//	server (HTTP)          server.go, health.go                 config, pool, channels, the inbox (a channels.Sink), features, metrics, draining, connection states
//
// Files, by concept:
//   - Building and running: gateway.go (Deps, New and Check wiring the
//     stages, the job queue's workers, Start and Stop), leaderjob.go
//     (LeaderJob, the one setup of a periodic job the leader runs),
//     channels.go (the channel of each platform section), features.go
//     (Feature and its optional interfaces, the Services a feature gets,
//     FeatureOf), jobs.go (Jobs: which queue a job goes to, and inserting
//     it in the caller's transaction, for the stages and the features).
//   - The inbox: inbox.go (Accept, the channels.Sink: the group rule, the
//     nonce claim, the message and its job in one transaction; Progress,
//     Shown and Refused for the channels).
//   - Runs: process.go (the job that answers a message: one run per
//     session, the outcome committed with its reply in one transaction),
//     leases_run.go (session leases: claimed, renewed, swept when lapsed,
//     the session handed on), agentrun.go (AgentRunner, the one way the
//     agent runs, for chat, the API and reports, and NewTurn, the one
//     place a run's input is put together), commands.go (/reset,
//     /help and their aliases), pending.go (a pending 「确认」 resolved and
//     its call run at most once, serving the files of the message that
//     asked; UserFacing errors), attachments.go (a
//     message's attachments fetched before it waits for its session,
//     turned into the model's input by gateway/media; quotes; the purge
//     past media.retention).
//   - Cards: cards.go (a confirmation, or a backend's question with its
//     choices, asked as a card where the channel is a channels.Carder;
//     a tap taken in Accept: the card locked, claimed at most once before
//     it expires, and the message it stands for stored in the same
//     transaction, so the pending call's one claim runs it at most once;
//     the outcome queued as the card's later update), cards_deliver.go
//     (a card part sent through the Carder, or as text where the platform
//     refuses it, counted; the update, which does nothing for a card that
//     went as text). Design: a button carries only the card id and its
//     action, and the tap becomes the button's word as if the asker typed
//     it, so the pipeline resolves it exactly as typed (pending.go): one
//     path, and a typed 「确认」 and a tap race for the same claim.
//   - Delivery and the outbox: outbox.go (Address and Outbox: a reply's
//     parts and its delivery job written in the producer's transaction),
//     deliver.go (the delivery job: a conversation's parts in order, one
//     recorded attempt each, an image uploaded once; a part held for a
//     live reply running here waits for it), pacing.go (the
//     platforms' per-minute limits, claimed in Postgres across replicas).
//   - Connections: connections.go (long connections kept through
//     channels.Reconnect; a one-per-bot connection on one replica under a
//     lease, which works the account's delivery queue).
//   - Live replies and drafts: live.go (a live reply driven by
//     channels.RunLive on the replica that accepted the message, and the
//     hold of the answer's first part), drafts.go (a streaming run's draft
//     stored every worker.draft_interval; the 「处理中…」 hint elsewhere).
//   - HTTP: server.go (the public and the admin routes: callbacks, the
//     features' routes, /metrics), health.go (connection states and
//     draining, for /readyz); every listener is ops.NewHTTPServer.
//
// Tests: gateway/gatewaytest is the shared harness of the tests that run a
// whole Hermes (a migrated database per test, the fake WeCom and model, the
// demo backend). The tests here are the pipeline's; each feature's sit
// beside it (gateway/reports, openaiapi, router, memory, ...).
// outbox_stage_test.go tests the outbox and delivery stages alone, on a pool
// and the in-memory channel, without a Gateway.
package gateway
