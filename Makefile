# `make serve` and `make test` each set a fresh machine up from nothing, then run.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# jupyter-ai 3, layered on the test venv so its server extensions load only where a test asks.
AI_STAMP := $(VENV)-jupyter-ai/.installed-stamp
# jupyter-collaboration 3's JupyterLab frontend with jupyter-suggestions, layered the same way: the
# page of a server started from it loads none of the test venv's JupyterLab extensions.
SUGGESTIONS_STAMP := $(VENV)-jupyter-suggestions/.installed-stamp
# Debian packages the test suite needs (installed only when missing).
APT_PACKAGES ?= chromium
# npm packages the test suite runs (JupyterHub's proxy, the MCP inspector), installed under the
# venv when missing: PACKAGE:COMMAND pairs, a package counting as installed when its command is.
NODE_PREFIX := $(VENV)/node
NODE_BIN := $(abspath $(NODE_PREFIX)/node_modules/.bin)
NPM_PACKAGES ?= configurable-http-proxy:configurable-http-proxy \
	@modelcontextprotocol/inspector@2:mcp-inspector
PYTEST_ARGS ?=
# Tests mostly wait on kernels, servers and browsers, so more workers than cores pays (on two
# cores, five took 538 to 592 s of pytest over four runs, longest modules first); each
# worker has its own temporary dirs and every server binds a port of its own choosing. A whole
# module goes to one worker, so a module's shared server starts once; the longest modules
# start first (tests/scheduling.py, from tests/durations.json). A worker that dies (a
# test past its timeout ends its worker, pyproject says why) ends the run, the test named:
# pytest-xdist 3.8 replacing it under --dist loadfile can wait for ever at the end of the run
# (pytest-xdist issue 1378).
PYTEST_WORKERS ?= 5
PYTEST := PATH="$(NODE_BIN):$$PATH" $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile \
	--max-worker-restart 0 --no-loadscope-reorder

.PHONY: serve test durations check docs setup system-packages node-packages lint format bench clean

serve: setup
	$(BIN)/ganymede serve examples

# pytest exits 5 when it collected nothing: make treats that as the failure it is.
test: setup $(AI_STAMP) $(SUGGESTIONS_STAMP) lint docs
	$(PYTEST) $(PYTEST_ARGS)

# Writes each test file's seconds again into tests/durations.json, the order later runs start
# files in: after adding a long file, or when one's time has changed a lot.
durations: setup $(AI_STAMP) $(SUGGESTIONS_STAMP)
	$(PYTEST) --record-durations $(PYTEST_ARGS)

# The edit-test loop: lint and every test not marked slow (no browser, hub, layered venv,
# stress, kernel run or second server).
check: setup lint
	$(PYTEST) -m "not slow" $(PYTEST_ARGS)

# The docs site, built strict into site/: a broken link, an unknown anchor or a page left out
# of the nav fails it (mkdocs.yml's validation). Material's banner about MkDocs 2 is left out.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

setup: system-packages node-packages $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,lab,docs]'
	touch $(STAMP)

$(AI_STAMP): $(STAMP) tests/jupyter_ai_env.py tests/layered_env.py
	rm -rf $(VENV)-jupyter-ai
	$(BIN)/python -m tests.jupyter_ai_env
	touch $(AI_STAMP)

$(SUGGESTIONS_STAMP): $(STAMP) tests/jupyter_suggestions_env.py tests/layered_env.py
	rm -rf $(VENV)-jupyter-suggestions
	$(BIN)/python -m tests.jupyter_suggestions_env
	touch $(SUGGESTIONS_STAMP)

system-packages:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

# npm comes with NodeSource's nodejs, and is a Debian package of its own beside Debian's.
node-packages: system-packages
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "installing Debian packages: nodejs npm"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; \
	fi
	@missing=""; for pair in $(NPM_PACKAGES); do package=$${pair%:*}; bin=$${pair##*:}; \
		PATH="$(NODE_BIN):$$PATH" command -v $$bin >/dev/null 2>&1 || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing npm packages:$$missing"; \
		npm install --no-audit --no-fund --silent --prefix $(NODE_PREFIX)$$missing; \
	fi

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format:
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: setup
	$(BIN)/python bench/execute.py

clean:
	rm -rf $(VENV) $(VENV)-jupyter-ai $(VENV)-jupyter-suggestions .pytest_cache .ruff_cache site
