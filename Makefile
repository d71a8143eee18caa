# The approval gateway. `make` alone lists the targets.
GO       ?= go
BIN      ?= bin/gateway
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
PKGS     := ./...

.DEFAULT_GOAL := help
.PHONY: help build run test bench lint fmt clean soak fuzz agents

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/gateway
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/gateway

run: build ## run the gateway on the embedded default (SQLite, web page on 127.0.0.1:8080)
	./$(BIN) serve $(ARGS)

agents: ## install the pinned agent CLIs the end-to-end tests drive (npm; GATEWAY_SKIP_AGENT_CLIS=1 skips)
	@.ci/agents/install

test: agents ## vet, gofmt check, and every test with the race detector
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) test -race -count=1 -timeout=45m $(PKGS)

bench: ## the benchmarks (figures quoted in the README)
	$(GO) test -run='^$$' -bench=. -benchmem -count=1 -timeout=60m $(PKGS)

soak: ## load, kill -9 and outage suite on loopback (about 9 min); prints the figures (SOAK_REPORT=file keeps them; SOAK_DSN=postgres://… runs it on PostgreSQL)
	GO=$(GO) $(GO) test -tags soak -run . -count=1 -timeout 30m -v ./soak/

# Every fuzz target, as package:Name. `go test -fuzz` takes one at a time.
# The docs test (cmd/gateway) fails when a Fuzz function of the tree is missing here.
FUZZ_TARGETS := \
	./gateway:FuzzRequestBody \
	./gateway:FuzzDecodeJSON \
	./messenger/slack:FuzzSlackPayload \
	./messenger/telegram:FuzzTelegramUpdate \
	./messenger/discord:FuzzDiscordCard \
	./cards:FuzzCallbackData \
	./cards:FuzzSlack \
	./cards:FuzzDisplay \
	./config:FuzzLoad \
	./policy:FuzzMatchGrant \
	./policy:FuzzMatchRule \
	./policy:FuzzWildcard \
	./policy:FuzzParseHost \
	./vaglio:FuzzGuard \
	./vaglio:FuzzGuardSeed \
	./vaglio:FuzzPathMatcher \
	./vaglio:FuzzGlob \
	./internal/jsonw:FuzzString \
	./hooks:FuzzMap \
	./hooks:FuzzAdapters \
	./policyimport:FuzzParse \
	./internal/shell:FuzzBashDifferential
FUZZTIME  ?= 30s
FUZZFLAGS ?= -parallel=1

fuzz: ## run every fuzz target for FUZZTIME (default 30s); see docs/fuzzing.md
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "== $$name ($$pkg)"; \
	  $(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $(FUZZFLAGS) $$pkg; \
	done

lint: ## vet, gofmt check, staticcheck
	$(GO) vet $(PKGS)
	@test -z "$$(gofmt -l .)" || (gofmt -l .; exit 1)
	@command -v staticcheck >/dev/null || $(GO) install honnef.co/go/tools/cmd/staticcheck@latest
	staticcheck $(PKGS)

fmt: ## format the code
	gofmt -w .

clean: ## remove build output
	rm -rf bin
