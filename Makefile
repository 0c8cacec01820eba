# The few entry points that the README and CI call.
PYTHON ?= python3
UV_VERSION := 0.13.8
VENV := .venv
BIN := $(VENV)/bin
PG_TEST_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test
PORT ?= 8000

.PHONY: dev test test-sqlite test-postgres lint typecheck schema bench bootstrap clean cluster

# Bootstrap from nothing: a virtual environment with the locked dependencies, compiled to
# bytecode up front (with PYTHONDONTWRITEBYTECODE set, as on CI, every process would
# otherwise compile them again at start: about 3.5 s per `backfiller` process here).
$(BIN)/backfiller: pyproject.toml uv.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	$(BIN)/uv sync --locked --quiet --compile-bytecode
	touch $@

# The TypeScript client's test dependencies, from its lock file.
clients/typescript/node_modules/.package-lock.json: clients/typescript/package-lock.json
	cd clients/typescript && npm ci --no-audit --no-fund

bootstrap: $(BIN)/backfiller clients/typescript/node_modules/.package-lock.json

# Quick start: API, daemon and UI on an embedded SQLite database, with the example jobs.
dev: bootstrap
	$(BIN)/backfiller dev --port $(PORT)

# The scaled-out topology on loopback: 2 API processes, 2 daemons, 3 Celery workers against
# PostgreSQL and RabbitMQ (docs/deploy.md).
cluster: bootstrap
	scripts/cluster.sh

# Everything CI checks: lint, types, the test suite on SQLite and on PostgreSQL. The two
# suites mostly wait on real servers and daemons, so they run side by side (output per suite).
test: bootstrap lint typecheck
	$(BIN)/python -m compileall -q backfiller tests bench
	$(MAKE) --no-print-directory -j2 --output-sync=target test-sqlite test-postgres

lint: bootstrap
	$(BIN)/ruff check backfiller tests bench
	$(BIN)/ruff format --check backfiller tests bench

typecheck: bootstrap
	$(BIN)/mypy

test-sqlite: bootstrap
	$(BIN)/pytest -q

test-postgres: bootstrap
	BACKFILLER_TEST_DATABASE_URL=$(PG_TEST_URL) $(BIN)/pytest -q -m "not browser"

# Regenerate the committed SDL after a schema change (a test fails while it is stale).
schema: bootstrap
	$(BIN)/backfiller schema export --output schema.graphql
	cd clients/typescript && { test -d node_modules || npm ci --no-audit --no-fund; } && npm run generate

bench: bootstrap
	$(BIN)/python -m bench.launch
	$(BIN)/python -m bench.daemon
	$(BIN)/python -m bench.celery

clean:
	rm -rf $(VENV) .backfiller .mypy_cache .ruff_cache .pytest_cache
