# Two set-up commands on a fresh machine (see README):
#   make demo   runs Hermes on embedded defaults with a scripted conversation
#   make test   prepares what the tests need (.ci/prepare: the local Postgres
#               started, chromium and CJK fonts installed, or the exact
#               command to run), then runs every test against the local Postgres
GO ?= go
# nomsgpack leaves gin's MessagePack binding and its codec (a ninth of the
# binary) out of every build and test run; Hermes never binds MessagePack.
# The Dockerfile builds with the same tag.
export GOFLAGS += -tags=nomsgpack

.PHONY: demo test bench build

demo:
	$(GO) run ./cmd/hermes demo

# The gateway's tests run alone, then the features' tests that run a whole
# Hermes (those importing gateway/gatewaytest, ~20 connections a test
# process, two processes at once: 41 at the peak measured), then the rest:
# the gateway's run four at once and use up to ~85 of the local server's
# 100 connections, and a whole Hermes per package beside as many packages
# as cores could pass 100 and hit "too many clients".
WHOLE_HERMES = $(GO) list -f '{{.ImportPath}}{{range .XTestImports}} {{.}}{{end}}' ./... | awk '$$1 !~ /\/gateway$$/ && / .*gateway\/gatewaytest/ {print $$1}'
test:
	.ci/prepare
	$(GO) test ./gateway/
	$(GO) test -p 2 $$($(WHOLE_HERMES))
	$(GO) test $$($(GO) list ./... | grep -v '/gateway$$' | grep -vxF "$$($(WHOLE_HERMES))")

# Benchmarks: the database's work per answered message (transactions,
# rows written and read, per table; pg_stat_database over the whole span),
# 1,000 conversations at once against a 2 s model on one and on
# two replicas (figures and ratios printed), 5,000 runs waiting at once on
# one replica (answered once, time against the ideal, peak RSS), the ack path against a bare
# insert (per transaction, and acks/s over HTTP at 32 and 128 at once against
# a one-INSERT-per-callback handler and against the floor, the callback
# checked and parsed and one row group-committed, side by side; a batch's nonce claims in
# one statement against one per nonce), the callback ack latency
# while a 2 s model is busy (WeCom app and AI
# bot, DingTalk, Feishu; frame-to-ack of the long connections), the time to the
# first streamed chunk with a model streaming 20 tokens/s, one whole turn
# with Postgres writes, the agent loop alone, and skill offering over the
# 20-skill sample catalog and generated ones of 100 and 500 near-duplicate
# skills (recall per step, chit-chat offered, token ratio, index cost),
# scheduled reports (tick to message over 100 ticks, chart render time),
# what metrics and tracing add to a callback's ack and a /metrics scrape,
# an attachment's cost (a 5 MB screenshot fetched, decrypted and made a model
# image part; a 20 MB PDF read into text: time and peak memory ÷ file size;
# hostile Office files, 49 MB of empty XML in 120 KB and 200,000 entries in
# 17 MB: CPU-s and MB allocated each, failing over 0.5 CPU-s or 64 MB),
# recalling an employee's memories among a million (p50/p99 in ms), the
# knowledge base over its company corpus (passage recall@5 at the model's
# input, lexical and hybrid; restricted and superseded passages reaching the
# model; unanswerable questions given a passage; the token ratio) and over
# 1,000 documents (search p50/p95, index size), and
# `hermes serve` started with the example config: time to ready and idle
# RSS, as shipped against a build without the Makefile's tags.
bench:
	$(GO) test -run '^$$' -bench ThousandConversations -benchtime 1x -timeout 10m ./gateway/
	$(GO) test -run '^$$' -bench FiveThousandWaiting -benchtime 1x -timeout 10m ./gateway/
	$(GO) test -run '^$$' -bench AcceptVsInsert -benchtime 3000x ./gateway/
	$(GO) test -run '^$$' -bench DBWorkPerMessage -benchtime 1x ./gateway/
	$(GO) test -run '^$$' -bench AckThroughput -benchtime 1x ./gateway/
	$(GO) test -run '^$$' -bench ClaimNonces ./gateway/store/
	$(GO) test -run '^$$' -bench 'CallbackAck|Turn' -benchtime 300x -benchmem ./gateway/
	$(GO) test -run '^$$' -bench 'AIBotFirstChunk' -benchtime 20x ./gateway/
	$(GO) test -run '^$$' -bench 'HTTPAck|StreamAck' -benchtime 300x ./channels/dingtalk/
	$(GO) test -run '^$$' -bench 'EventAck|FrameAck' -benchtime 300x ./channels/feishu/
	$(GO) test -run '^$$' -bench . -benchmem ./agent/
	$(GO) test -run '^$$' -bench Image5MB -benchtime 5x ./gateway/media/
	$(GO) test -run '^$$' -bench ExtractPDF20MB -benchtime 3x ./gateway/media/document/
	$(GO) test -run '^$$' -bench HostileFiles -benchtime 3x ./gateway/media/document/
	$(GO) test -run '^$$' -bench ReportTickToMessage -benchtime 100x ./gateway/reports/
	$(GO) test -run '^$$' -bench RenderBarChart -benchmem ./gateway/reports/
	$(GO) test -run '^$$' -bench 'AckObservability|MetricsScrape' -benchmem -benchtime 3000x ./gateway/ops/
	$(GO) test -run '^$$' -bench '^BenchmarkRecall$$' -benchtime 2000x ./gateway/memory/
	$(GO) test -run '^$$' -bench '^BenchmarkKnowledge$$' -benchtime 1x -timeout 20m ./gateway/knowledge/
	$(GO) test -run '^$$' -bench LimiterCall -benchtime 2000x ./gateway/modellimit/
	$(GO) test -run '^$$' -bench ConsoleCharts1M -benchtime 5x -timeout 20m ./gateway/store/
	$(GO) test -run '^$$' -bench ServeStartup -benchtime 1x ./cmd/hermes/

build:
	$(GO) build -o bin/hermes ./cmd/hermes
