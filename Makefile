# Quorum — two commands matter: `make demo` and `make test` (see README.md).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8000

# Django 6 needs Python >= 3.12. Look on PATH first, then in pyenv's versions
# directory directly: pyenv's python3.X shims only answer when PYENV_VERSION is set.
define FIND_PYTHON
for c in "$$QUORUM_PYTHON" python3.13 python3.12 python3 \
         "$${PYENV_ROOT:-$$HOME/.pyenv}"/versions/3.1[3-9]*/bin/python3 \
         "$${PYENV_ROOT:-$$HOME/.pyenv}"/versions/3.12*/bin/python3; do \
  [ -n "$$c" ] || continue; \
  if "$$c" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; then \
    command -v "$$c" 2>/dev/null || echo "$$c"; exit 0; fi; \
done; exit 1
endef
export FIND_PYTHON

.PHONY: help venv demo serve test lint check format bench bench-api bench-burst clean

help:
	@echo "make demo   - install, migrate, seed a demo workspace, serve on http://127.0.0.1:8000 (PORT=...)"
	@echo "make test   - install and run the test suite (services used when DATABASE_URL/REDIS_URL are set)"
	@echo "make lint   - ruff check + format check"
	@echo "make check  - lint, mypy, migrations in step with the models, check --deploy (CI runs it)"
	@echo "make bench  - pipeline, code-index, analyzer-precision, review-page, live fan-out, model-cost and MCP start benchmarks"
	@echo "make bench-api - the apiContract axis on published PyPI and npm releases (downloads them)"
	@echo "make bench-burst - thirty pull requests at once on the full stack (needs PostgreSQL 14+ and Redis)"

# uv installs what pip would (the same versions), in seconds rather than minutes.
$(STAMP): pyproject.toml
	@base=$$(bash -c "$$FIND_PYTHON") || { \
	  echo "error: Quorum needs Python 3.12 or newer and none was found." >&2; \
	  echo "       Tried python3.13, python3.12, python3 on PATH and pyenv versions." >&2; \
	  echo "       Install one, or point QUORUM_PYTHON at an interpreter." >&2; exit 1; }; \
	echo "Using $$base ($$($$base --version))"; \
	[ -x $(PY) ] && $(PY) -c 'import sys; sys.exit(sys.version_info < (3, 12))' || { rm -rf $(VENV); $$base -m venv $(VENV); }
	$(PY) -m pip install --quiet uv
	$(VENV)/bin/uv pip install --quiet --python $(PY) -e ".[dev]"
	@touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py demo_setup --port $(PORT)
	$(PY) manage.py runserver 127.0.0.1:$(PORT)

# Without DATABASE_URL/REDIS_URL the embedded default is tested and service tests are skipped;
# .ci/run runs it that way, then sets both and passes --require-services so that nothing can be
# skipped. Tests run in parallel (pytest-xdist): most of their time is spent waiting on servers,
# subprocesses and a browser, so more workers than cores pays (TEST_WORKERS=0: one process).
TEST_WORKERS ?= 4
test: $(STAMP)
	SECRET_KEY=$${SECRET_KEY:-test-only-not-a-secret} $(PY) -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

# Benchmarks print JSON figures (ratios and counts); see the docstring of each script.
bench: $(STAMP)
	$(PY) -m tests.bench.bench_pipeline
	$(PY) -m tests.bench.bench_index
	$(PY) -m tests.bench.bench_precision
	$(PY) -m tests.bench.bench_review_page
	$(PY) -m tests.bench.bench_ws_fanout
	$(PY) -m tests.bench.bench_cost
	$(PY) -m tests.bench.bench_mcp_start

# Downloads published releases from PyPI and npm (cached under ~/.cache/quorum-bench).
bench-api: $(STAMP)
	$(PY) -m tests.bench.bench_api_releases

# The full stack under thirty webhooks at once: daphne, Celery workers, PostgreSQL and Redis on
# 127.0.0.1 (services the Makefile does not install, so not part of `make bench`); a database
# and a Redis database of its own, created and dropped. BURST_ARGS="--prs 3" for a smoke run.
bench-burst: $(STAMP)
	$(PY) -m tests.bench.bench_burst $(BURST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# The full stack with DEBUG off, behind a TLS-terminating proxy, as README "HTTPS, security
# headers and request limits" configures it. Nothing connects to these URLs; the keys are
# random for each run.
DEPLOY_ENV := DEBUG=false ALLOWED_HOSTS=quorum.example.com \
	DATABASE_URL=postgres://quorum@127.0.0.1:5432/quorum REDIS_URL=redis://127.0.0.1:6379/0 \
	SECURE_SSL_REDIRECT=true SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO \
	SECURE_HSTS_SECONDS=31536000 SECURE_HSTS_INCLUDE_SUBDOMAINS=true SECURE_HSTS_PRELOAD=true
RANDOM_KEY = $$($(PY) -c 'import secrets; print(secrets.token_urlsafe(50))')

check: lint
	# The layer contracts of docs/architecture.md (pyproject.toml [tool.importlinter]).
	$(VENV)/bin/lint-imports
	SECRET_KEY=$${SECRET_KEY:-test-only-not-a-secret} $(VENV)/bin/mypy
	SECRET_KEY=$${SECRET_KEY:-test-only-not-a-secret} $(PY) manage.py makemigrations --check --dry-run
	env $(DEPLOY_ENV) SECRET_KEY=$(RANDOM_KEY) QUORUM_AUDIT_KEY=$(RANDOM_KEY) \
	  $(PY) manage.py check --deploy --fail-level WARNING
	# The same check with exactly the environment docker/compose.yaml gives the web process.
	$(PY) -m pytest tests/config/test_compose_env.py -q -p no:cacheprovider

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .mypy_cache
