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
# turn with Postgres writes, and the agent loop alone.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 300x -benchmem ./gateway/
	$(GO) test -run '^$$' -bench . -benchmem ./agent/

build:
	$(GO) build -o bin/hermes ./cmd/hermes
