# The few entry points that the README and CI call.
PYTHON ?= python3
UV_VERSION := 0.13.8
VENV := .venv
BIN := $(VENV)/bin
PG_TEST_URL ?= postgresql+psycopg://postgres@127.0.0.1:5432/test
PORT ?= 8000

.PHONY: dev test test-unit test-slow-paths build test-sqlite test-sqlite-lane test-postgres lint typecheck schema bench bootstrap clean cluster screenshots

# Bootstrap from nothing: a virtual environment with the locked dependencies, compiled to
# bytecode up front (with PYTHONDONTWRITEBYTECODE set, as on CI, every process would
# otherwise compile them again at start: about 3.5 s per `backfiller` process here).
$(BIN)/backfiller: pyproject.toml clients/python/pyproject.toml uv.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	$(BIN)/uv sync --locked --quiet --compile-bytecode
	touch $@

# The TypeScript client's test dependencies, from its lock file.
clients/typescript/node_modules/.package-lock.json: clients/typescript/package-lock.json
	cd clients/typescript && npm ci --no-audit --no-fund

# The browser tests' Node packages (an OpenID provider, axe-core), from their lock file.
tests/browser/node/node_modules/.package-lock.json: tests/browser/node/package-lock.json
	cd tests/browser/node && npm ci --no-audit --no-fund

bootstrap: $(BIN)/backfiller clients/typescript/node_modules/.package-lock.json tests/browser/node/node_modules/.package-lock.json

# Quick start: API, daemon and UI on an embedded SQLite database, with the example jobs.
# Python and make only: Node is for the TypeScript client's tests (make test).
dev: $(BIN)/backfiller
	@echo "The backfiller command is in $(BIN)/: in another terminal, run 'source $(BIN)/activate'."
	$(BIN)/backfiller dev --port $(PORT)

# The scaled-out topology on loopback: 2 API processes, 2 daemons, 3 Celery workers against
# PostgreSQL and RabbitMQ (BROKER=redis for Redis; docs/deploy.md). Python only, like dev.
cluster: $(BIN)/backfiller
	@scripts/cluster.sh

# Everything CI checks: lint, types, the test suite on SQLite and on PostgreSQL, and the
# integration and security tiers with the speed paths off. The two suites mostly wait on real
# servers and daemons, so they run side by side (output per lane); the SQLite suite ends some
# minutes before the PostgreSQL one (the Celery tests run on PostgreSQL only), so the
# slow-path tier follows it in its lane. A third lane beside them gained nothing on 2 cores
# (the CPU is the limit) and made timing-sensitive tests fail. The type check (mypy, about 17 s
# of one core from a fresh checkout) runs beside the two suites rather than before them; a
# type error still fails `make test`.
test: bootstrap lint
	$(BIN)/python -m compileall -q backfiller clients/python tests bench
	$(MAKE) --no-print-directory -j3 --output-sync=target typecheck test-sqlite-lane test-postgres

test-sqlite-lane: bootstrap
	$(MAKE) --no-print-directory test-sqlite
	$(MAKE) --no-print-directory test-slow-paths

# The inner loop, in seconds: ruff, then the unit tests (the import contracts included:
# tests/unit/test_import_layers.py runs lint-imports per contract), the migrations and the
# contract tests, on SQLite; the time it took, last.
test-unit: $(BIN)/backfiller
	@began=$$(date +%s%N); \
	$(BIN)/ruff check backfiller clients/python tests bench && \
	$(BIN)/ruff format --check --quiet backfiller clients/python tests bench && \
	$(BIN)/pytest -q -n 2 tests/unit tests/migrations tests/contract; \
	status=$$?; \
	tenths=$$(( ($$(date +%s%N) - began) / 100000000 )); \
	echo "make test-unit: $$((tenths / 10)).$$((tenths % 10)) s"; \
	exit $$status

lint: bootstrap
	$(BIN)/ruff check backfiller clients/python tests bench
	$(BIN)/ruff format --check backfiller clients/python tests bench

typecheck: bootstrap
	$(BIN)/mypy

# Each suite runs on TEST_PROCESSES pytest-xdist processes, a module to a process (module
# fixtures start one server per module). Most tests wait on real servers and daemons, so
# more processes than cores pay off; every process has its own databases and ports.
TEST_PROCESSES ?= 2
XDIST = -n $(TEST_PROCESSES) --dist loadscope

test-sqlite: bootstrap
	$(BIN)/pytest -q --durations=15 $(XDIST)

test-postgres: bootstrap
	BACKFILLER_TEST_DATABASE_URL=$(PG_TEST_URL) $(BIN)/pytest -q --durations=15 $(XDIST) -m "not browser and not any_database"

# The integration and security tiers again with every speed path off (Settings.fast_paths:
# the library's own executor, body parsing, routing, socket writes, statements and greenlets),
# so that the slow paths keep proving the fast ones end to end. SQLite.
test-slow-paths: bootstrap
	BACKFILLER_FAST_PATHS=0 $(BIN)/pytest -q --durations=5 $(XDIST) tests/integration tests/security

# Regenerate the committed SDL and the generated clients (TypeScript, Java, Go) after a schema
# change (a test fails while any of them is stale).
schema: bootstrap
	$(BIN)/backfiller schema export --output schema.graphql
	cd clients/typescript && { test -d node_modules || npm ci --no-audit --no-fund; } && npm run generate
	cd clients/java && { test -d node_modules || npm ci --no-audit --no-fund; } && npm run generate
	clients/go/generate.sh

# Both distributions (backfiller and backfiller-client), wheels and sdists, into dist/.
build: $(BIN)/backfiller
	$(BIN)/uv build --all-packages --out-dir dist

# The UI's screenshots in docs/screenshots/ (each page, light and dark), from the browser tests.
screenshots: bootstrap
	BACKFILLER_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q -n 0 tests/browser/test_display.py -k axe

bench: bootstrap
	$(BIN)/python -m bench.launch
	$(BIN)/python -m bench.daemon
	$(BIN)/python -m bench.celery

clean:
	rm -rf $(VENV) .backfiller .mypy_cache .ruff_cache .pytest_cache
