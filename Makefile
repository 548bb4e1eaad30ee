# The same commands CI runs. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint bench serve clean browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

# Debian's Chromium and its driver run the browser tests; install them only when missing.
browser:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
		echo "installing chromium and chromium-driver"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	fi

demo: $(STAMP)
	$(BIN)/sitelens demo

serve: $(STAMP)
	$(BIN)/sitelens serve

test: $(STAMP) browser
	$(BIN)/ruff check api_backend api_client dashboard tests
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check api_backend api_client dashboard tests
	$(BIN)/ruff format --check api_backend api_client dashboard tests

bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[test,bench]"
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) data .pytest_cache
