# The same commands CI runs. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench serve clean browser postgres fuzz

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

# Debian's Chromium and its driver run the browser tests, and a colour emoji font draws the country flags in their
# screenshots; install them only when missing.
browser:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1 \
		|| ! dpkg -s fonts-noto-color-emoji >/dev/null 2>&1; then \
		echo "installing chromium, chromium-driver and fonts-noto-color-emoji"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver \
			fonts-noto-color-emoji; \
	fi

# When the machine has PostgreSQL, start its cluster and a test role so the metadata store is tested on it too.
PG_TEST_URL := postgresql://sitelens:sitelens@127.0.0.1:5432/postgres
postgres:
	@if command -v pg_lsclusters >/dev/null 2>&1 && [ -n "$$(pg_lsclusters -h 2>/dev/null)" ]; then \
		set -- $$(pg_lsclusters -h | head -n 1); \
		pg_ctlcluster "$$1" "$$2" start 2>/dev/null || true; \
		su postgres -c "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname='sitelens'\"" | grep -q 1 || \
			su postgres -c "psql -qc \"CREATE ROLE sitelens LOGIN PASSWORD 'sitelens' CREATEDB\""; \
	fi

demo: $(STAMP)
	$(BIN)/sitelens demo

serve: $(STAMP)
	$(BIN)/sitelens serve

# The suite runs in TEST_WORKERS processes, a test file per process at a time (browser tests mostly wait on Chromium,
# so three share two cores well); TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3
test: $(STAMP) browser postgres
	$(BIN)/ruff check api_backend api_client dashboard sitelens tests bench
	$(BIN)/mypy
	if pg_isready -q -h 127.0.0.1 2>/dev/null; then export TEST_POSTGRES_URL="$(PG_TEST_URL)"; fi; \
		$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=20

# Schemathesis, every phase and check, against the app served on loopback with a seeded site (a short run is
# part of `make test`). FUZZ_EXAMPLES sets the examples per operation.
FUZZ_EXAMPLES ?= 100
fuzz: $(STAMP)
	$(BIN)/python -m tests.support.fuzz --max-examples $(FUZZ_EXAMPLES)

lint: $(STAMP)
	$(BIN)/ruff check api_backend api_client dashboard sitelens tests bench
	$(BIN)/ruff format --check api_backend api_client dashboard sitelens tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[test,bench]"
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) data .pytest_cache
