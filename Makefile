# The commands the README shows. `make demo` runs the main job end to end; `make test` the tests.
SHELL := /bin/bash
KGQA := .venv/bin/kgqa
PYTEST := .venv/bin/pytest

.PHONY: setup setup-browser demo test test-unit test-integration test-faults lint typecheck bench clean

setup:
	./scripts/setup.sh

# Start Neo4j, load the sample KB (embedding it), ask a question.
demo: setup
	$(KGQA) neo4j start
	$(KGQA) load kgqa/data/sample_kb.txt
	$(KGQA) stats
	$(KGQA) ask "What languages are spoken in the films directed by [Joel Zwick]?"

# Lint and types first (seconds), then every tier: unit, integration (starts its own Neo4j),
# browser (the page in headless Chromium: setup-browser installs it), slow end-to-end (real
# models).
test: setup setup-browser lint typecheck
	$(PYTEST) -q

setup-browser:
	./scripts/setup-browser.sh

test-unit: setup
	$(PYTEST) -q -m unit

test-integration: setup
	$(PYTEST) -q -m integration

# Fault injection (part of the integration tier and of `make test`; docs/reliability.md).
test-faults: setup
	$(PYTEST) -q -m faults

lint:
	.venv/bin/ruff check kgqa loaders tests benchmarks
	.venv/bin/ruff format --check kgqa loaders tests benchmarks

typecheck:
	.venv/bin/mypy kgqa loaders

clean:
	rm -rf .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
