# Red packets: run it locally, test it, build and deploy it.
SHELL := /bin/bash
export SAM_CLI_TELEMETRY := 0

.PHONY: run test check verify-build token ops-token console-screenshots app-screenshots deploy-console topup reconcile export trial-balance statement funds quarantine replay restore-report settings release build deploy bench bench-campaign bench-reads bench-controls bench-kit bench-fairness books-scale soak install invoke profile-grab preflight

## make run: Redis + DynamoDB Local + the local API on http://127.0.0.1:$(PORT) (default 3000)
run:
	scripts/run-local.sh

## make test: every test against a Redis and a DynamoDB Local of its own, the functions through
## sam local invoke on a Docker daemon of its own, then sam validate --lint and the template's checks
test:
	scripts/test.sh

## make check: rustfmt, clippy -D warnings and the service-free tests (no Redis, no DynamoDB), in a minute or two
check:
	scripts/check.sh

## make token U=alice: a bearer token for the local API
token:
	@cargo run -q -p local -- token $(or $(U),alice)

## make console-screenshots: the operators' console's pages in Chromium, saved as docs/console/*.png
## (the same run as make test's browser tests, on services of its own)
console-screenshots:
	SCREENSHOTS=1 scripts/console-e2e.sh

## make app-screenshots: the H5 app's pages in Chromium at a phone's size, saved as docs/app/*.png
## (the same run as make test's: the SDK's tests, then the app's browser test, on services of its own)
app-screenshots:
	SCREENSHOTS=1 scripts/app-e2e.sh

## make ops-token OP=anna ROLES=support,finance: an operator's bearer token for the local
## operators' API (/ops/v1), roles among support, finance, risk and admin
ops-token:
	@cargo run -q -p local -- ops-token $(or $(OP),anna) "$(if $(filter undefined,$(origin ROLES)),support,$(ROLES))"

# make run's DynamoDB Local (LOCAL_DYNAMODB_PORT, default 8479), for the funds commands below.
FUNDS_ENV = AWS_ENDPOINT_URL_DYNAMODB=$${AWS_ENDPOINT_URL_DYNAMODB:-http://127.0.0.1:$${LOCAL_DYNAMODB_PORT:-8479}} \
	AWS_ACCESS_KEY_ID=$${AWS_ACCESS_KEY_ID:-local} AWS_SECRET_ACCESS_KEY=$${AWS_SECRET_ACCESS_KEY:-local} \
	AWS_REGION=$${AWS_REGION:-us-east-1}

## make topup U=alice CENTS=50000 [REF=payment-1]: credit a wallet of make run's stack, as the payments system would
topup:
	@$(FUNDS_ENV) cargo run -q -p local -- topup $(or $(U),alice) $(or $(CENTS),50000) $(REF)

## make reconcile [AS_OF=<RFC 3339>] [PASSES=n] [FILE=<export>]: check that make run's books (or an
## export file's) balance as of a cut-off (default: a minute ago); RECONCILIATION_MISMATCH and exit 1 otherwise
reconcile:
	@$(FUNDS_ENV) cargo run -q -p local -- reconcile $(if $(FILE),--file $(FILE)) $(if $(AS_OF),--as-of $(AS_OF)) $(if $(PASSES),--passes $(PASSES))

## make export FILE=ledger.jsonl: make run's table as an export file (DynamoDB's export shape)
export:
	@$(FUNDS_ENV) cargo run -q -p local -- export $(or $(FILE),ledger.jsonl)

## make trial-balance [DAY=2026-11-23]: the day's trial balance (default yesterday, UTC), JSON lines and CSV under reports/
trial-balance:
	@$(FUNDS_ENV) cargo run -q -p local -- trial-balance $(DAY)

## make funds PAYLOAD='{"audit": {"day": "2026-11-25"}}' (or a file): any payload to the funds
## function on make run's ledger (a withdrawal's resolution, an adjustment's proposal or approval)
funds:
	@$(FUNDS_ENV) cargo run -q -p local -- funds '$(PAYLOAD)'

## make statement U=alice DAY=2026-11-23: a user's statement of a day, JSON lines and CSV under reports/
statement:
	@$(FUNDS_ENV) cargo run -q -p local -- statement $(or $(U),alice) $(or $(DAY),$$(date -u +%F))

# make run's Redis too (LOCAL_REDIS_PORT, default 6479), for the quarantine commands below.
SETTLE_ENV = $(FUNDS_ENV) REDIS_URL=$${REDIS_URL:-redis://127.0.0.1:$${LOCAL_REDIS_PORT:-6479}}

## make quarantine: a settle run on make run's stack; its summary lists the packets in quarantine
quarantine:
	@$(SETTLE_ENV) cargo run -q -p local -- quarantine

## make replay: after the ledger was restored from a backup, settle every packet make run's Redis
## holds again from its first grab (docs/OPERATIONS.md, "Restoring the ledger")
replay:
	@$(SETTLE_ENV) cargo run -q -p local -- replay

## make settings: DEPLOY.md's and DESIGN.md's settings table, generated again from shared/core/src/settings.rs
settings:
	@cargo run -q -p local -- settings --write

## make restore-report FROM=<table before> TO=<restored table>: what the restore lost, item by item
## (lost, changed, rewritten, extra: JSON lines with ids, then counts); exit 1 when it lost money
restore-report:
	@$(FUNDS_ENV) cargo run -q -p local -- restore-report $(FROM) $(TO)

## make release ID=<packet id> OPERATOR=<name> REASON="<why>": take a packet out of quarantine (once
## explained); settle tries it again, and the day's audit trail names who released it and why
release:
	@$(SETTLE_ENV) cargo run -q -p local -- release --operator "$(OPERATOR)" --reason "$(REASON)" $(ID)

## make invoke FN=grab EVENT=events/grab.json: one event on one function against make run's services,
## through sam local invoke where a Docker daemon answers (the function's debug binary, laid out as sam
## build lays it out, in SAM's container of this machine's architecture), else on its release binary
## under AWS's Lambda Runtime Interface Emulator; says which.
## FN is send, grab, query, settle, funds, operator or risk (EVENT defaults to events/<FN>.json, for funds
## events/reconcile.json, for operator events/adjustment-propose.json)
invoke:
	FN=$(FN) EVENT=$(EVENT) scripts/invoke.sh

## make build: sam build (arm64, cargo-lambda + zig) and the size of each function's bootstrap
build:
	scripts/build.sh

## make verify-build: the arm64 artifacts of make build, each under AWS's emulator through qemu-user,
## answering every sample event of its function against make run's services; run it before make deploy
verify-build:
	scripts/verify-build.sh

## make preflight [Stage=...] [REGION=...] [PROFILE=...] [any template parameter=VALUE]: the account's Lambda
## concurrency, API Gateway throttling, DynamoDB and ElastiCache quotas (AWS CLI, installed into .local/venv if
## missing) against the parameters make deploy would use (template defaults, samconfig.toml, these); says what
## to raise first, exit 1 when the deploy would be refused
preflight:
	scripts/stack.sh install-awscli
	.local/venv/bin/python scripts/preflight.py --aws "$(CURDIR)/.local/venv/bin/aws" \
		$(if $(REGION),--region $(REGION)) $(if $(PROFILE),--profile $(PROFILE)) \
		$(filter-out REGION=% PROFILE=%,$(MAKEOVERRIDES))

## make deploy: sam deploy --guided (after make build)
deploy: build
	PATH="$(CURDIR)/.local/venv/bin:$$PATH" sam deploy --guided

## make deploy-console STACK=<stack>: the operators' console onto a deployed stack (docs/DEPLOY.md)
deploy-console:
	.local/venv/bin/python scripts/deploy_console.py --stack $(STACK)

## make bench: the benchmarks (not part of make test); rewrites BENCHMARKS.md and bench/results/
bench:
	scripts/bench.sh

## make bench-campaign: the campaign packet alone (100,000 shares opening at an instant, then settled under the partition ceiling): bench/results/campaign.json, BENCHMARKS.md
bench-campaign:
	BENCH_CAMPAIGN_ONLY=1 scripts/bench.sh

## make bench-reads: the read side of a campaign: a page and a 304 of the shared view of a 1,000- and a 100,000-share packet, open and settled (Redis commands, DynamoDB read units, bytes, p50/p99), and 10,000 viewers polling through one edge location (what reaches the function): bench/results/reads.json, BENCHMARKS.md
bench-reads:
	BENCH_READS_ONLY=1 scripts/bench.sh

## make bench-controls: the risk controls off and on (the grab rate, 1,000 holds in force): the grab handler's Redis CPU and latency at concurrency 1 and 256; pattern detection's cost per event and false flags on ordinary chats (BENCH_PATTERNS_ONLY=1 alone): bench/results/controls.json, BENCHMARKS.md
bench-controls:
	BENCH_CONTROLS_ONLY=1 scripts/bench.sh

## make bench-kit: what the app team's kit costs the server: membership tickets on the single-call grab path (Redis CPU, p50), and a 304 against a full answer on the packet view, history and wallet (latency, bytes, Redis commands, DynamoDB calls): bench/results/kit.json, BENCHMARKS.md
bench-kit:
	BENCH_KIT_ONLY=1 scripts/bench.sh

## make bench-fairness: the fairness simulation alone (no services): every grab position's share and best-luck chance per rule and split version, into bench/results/ and BENCHMARKS.md
bench-fairness:
	cargo run --release --locked -p bench --bin bench -- fairness

## make books-scale [ITEMS=10000000] [PASSES=1]: reconciliation over a generated export file of ITEMS items: time and peak memory
books-scale:
	scripts/books-scale.sh $(or $(ITEMS),10000000) $(or $(PASSES),1)

## make profile-grab: Redis time per fresh grab, grab.lua and grab_many.lua vs the seeds' two-list script, per command (PERF=1: perf too)
profile-grab:
	scripts/stack.sh install-services
	[ -x .local/profile/bin/python ] || { python3 -m venv .local/profile && .local/profile/bin/pip install -q 'redis>=5,<9'; }
	.local/profile/bin/python bench/profile/grab_lua.py $(if $(PERF),--perf)

## make soak: 10 minutes of mixed traffic on the local stack (SOAK_SECONDS=600); memory flat, invariants hold
soak:
	scripts/soak.sh

## make install: install Redis, Java, DynamoDB Local and SAM CLI if missing
install:
	scripts/stack.sh install
