# Sluice developer tasks. `make help` lists them.
GO            ?= go
GOLANGCI_LINT ?= $(shell command -v golangci-lint 2>/dev/null || ls $$($(GO) env GOPATH)/bin/golangci-lint 2>/dev/null || echo "$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0")
BENCH         ?= .
BENCHTIME     ?= 1s

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  %-10s %s\n", $$1, $$2}'

.PHONY: run
run: ## Run sluice server on the embedded default Redis
	$(GO) run ./cmd/sluice server

.PHONY: build
build: ## Build the sluice binary into bin/
	$(GO) build -o bin/sluice ./cmd/sluice

.PHONY: test
test: ## Run every test with the race detector against a real redis-server
	@# Builds Jaeger (the tracing tests' backend) once per machine, into the user's cache.
	$(GO) test -count=1 -timeout 60m -run TestJaegerRoundTrip ./internal/testkit/jaegertest/
	$(GO) test -race -count=1 -timeout 20m ./...
	cd bench && $(GO) vet ./... && $(GO) test -race -count=1 -timeout 10m ./...

.PHONY: chaos
chaos: ## Kill workers, servers, schedulers and Redis under load, and a noisy tenant beside a canary (about 6 minutes); fails on any lost job or tick
	$(GO) test -tags chaos -count=1 -timeout 15m -v ./internal/chaos/

.PHONY: bench
bench: ## Run the Go benchmarks (BENCH=regexp BENCHTIME=1s); side-by-side ones: make bench-peers
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) ./...

.PHONY: bench-peers
bench-peers: ## Run the side-by-side benchmarks against asynq, redis_rate and rockscache (bench/)
	cd bench && $(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) ./...

.PHONY: lint
lint: ## Run gofmt, go vet and golangci-lint
	@test -z "$$(gofmt -l .)" || (echo "not gofmt-ed:"; gofmt -l .; exit 1)
	$(GO) vet ./...
	$(GOLANGCI_LINT) run ./...
