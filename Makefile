# Two set-up commands on a fresh machine (see README):
#   make demo   runs Hermes on embedded defaults with a scripted conversation
#   make test   runs every test against the local Postgres
GO ?= go

.PHONY: demo test bench build

demo:
	$(GO) run ./cmd/hermes demo

test:
	$(GO) test ./...

# Benchmarks: the callback ack latency while a 2 s model is busy, one whole
# turn with Postgres writes, the agent loop alone, and skill offering over the
# 20-skill sample catalog (offered%, token ratio median/p90, index cost).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 300x -benchmem ./gateway/
	$(GO) test -run '^$$' -bench . -benchmem ./agent/

build:
	$(GO) build -o bin/hermes ./cmd/hermes
