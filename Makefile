# Two entry points do all set-up: `make run` and `make test`.
# Both create .venv and install the package when it is missing or pyproject.toml changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
BROWSER_STAMP := $(VENV)/.browser-tried
BENCH_STAMP := $(VENV)/.bench-stamp
DURATION ?= 30m

.PHONY: run test test-pg test-browser bench bench-quick soak interop clean browser

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/echsd serve $(ARGS)

test: $(STAMP) $(BROWSER_STAMP)
	$(BIN)/python -m pytest $(ARGS)

# The web view's browser tests (tests/web/test_browser.py) drive Debian's Chromium; where it
# is missing, install it once with apt-get if we can (root, apt present), and never fail the
# build if we cannot: the tests then skip, saying why.
$(BROWSER_STAMP): | $(STAMP)
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's chromium and chromium-driver for the browser tests"; \
	  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; }; } || \
	  echo "could not install chromium: the browser tests will be skipped"; \
	else echo "no chromium and no way to install it: the browser tests will be skipped"; fi
	@touch $(BROWSER_STAMP)

browser:
	rm -f $(BROWSER_STAMP)
	$(MAKE) $(BROWSER_STAMP)

# The browser test alone (about 30 s), with its screenshots' directory printed.
test-browser: $(STAMP) $(BROWSER_STAMP)
	$(BIN)/python -m pytest tests/web/test_browser.py -s -ra $(ARGS)

# The whole suite with every test daemon on PostgreSQL (a throwaway cluster in a temp dir).
test-pg: $(STAMP)
	ECHS_TEST_STORE=postgresql $(BIN)/python -m pytest $(ARGS)

bench: $(STAMP)
	$(BIN)/python -m bench $(ARGS)

# The bench extra (matplotlib, for the plot) on top of the test set-up.
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test,bench]'
	touch $(BENCH_STAMP)

# About a minute: the headline figures beside their raw limits, as bench/results/latest.json,
# latest.md and latest.png (ARGS=--publish also copies them to docs/bench/, which the README links).
bench-quick: $(BENCH_STAMP)
	$(BIN)/python -m bench.quick $(ARGS)

# Not in CI: mixed traffic over 100 threads against a real daemon for DURATION (30m; e.g.
# DURATION=5m), with restarts and kills; samples and a summary land in bench/results/soak-*/.
soak: $(STAMP)
	$(BIN)/python -m bench.soak --duration $(DURATION) $(ARGS)

# The real Codex CLI against echsd: its TUI against `echsd serve --app-server`
# (tests/appserver/test_tui.py), and as an MCP client of `echsd mcp` (tests/mcp/test_codex_interop.py).
# The Codex CLI is installed from npm into a cache directory first (bin/install-codex-cli).
interop: $(STAMP)
	codex="$$(bin/install-codex-cli)" && ECHS_CODEX_BIN="$$codex" $(BIN)/python -m pytest tests/appserver/test_tui.py tests/mcp/test_codex_interop.py -ra -m interop $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
