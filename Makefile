# The two commands of the quick start: `make book` and `make test`.
# Everything is installed into .venv from requirements.txt; nothing by hand.
SHELL  := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JB_FLAGS := -W -n --keep-going

.PHONY: help install book test test-lib test-notebooks test-build test-browser lab bench clean clean-notebooks

help:
	@echo "make install  create $(VENV) and install the book stack and lib"
	@echo "make book     install, then build the HTML book into _build/html"
	@echo "make test     install, then lib tests, nbval on every notebook, strict book build,"
	@echo "              every page in headless Chromium with no network (test-browser)"
	@echo "make lab      JupyterLab on the notebooks, lib importable, widgets live"
	@echo "make bench    time lib against PyTorch (benchmarks/)"
	@echo "make clean    remove _build (the executed-notebook cache included)"

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)

# The execution cache re-runs a notebook only when its own cells change. The chapters' results also
# depend on lib/ and the pinned packages, so a change there clears the cache before the build.
DEPS_HASH = $(shell cat lib/*.py requirements.txt | sha256sum | cut -c1-16)
define build-book
	@if [ "$$(cat _build/.deps-hash 2>/dev/null)" != "$(DEPS_HASH)" ]; then \
	    echo "lib/ or requirements.txt changed since the last build: clearing the execution cache"; \
	    rm -rf _build/.jupyter_cache; fi
	$(BIN)/jupyter-book build . $(JB_FLAGS)
	@echo $(DEPS_HASH) > _build/.deps-hash
endef

book: install
	$(build-book)
	@echo "Open _build/html/index.html"

test: install test-lib test-notebooks test-build test-browser

test-lib: install
	$(BIN)/python -m pytest tests --ignore=tests/browser

test-notebooks: install
	$(BIN)/python -m pytest --nbval-lax --nbval-sanitize-with tests/sanitize.cfg -p no:cacheprovider book

test-build: install
	$(build-book)

# Every page of _build/html (or BOOK_HTML=dir) in headless Chromium, offline: run after the build.
# Skips with a message where Chromium is missing (REQUIRE_BROWSER_TEST=1 makes that a failure).
test-browser: install
	$(BIN)/python -m pytest tests/browser

# JUPYTER_PATH puts this venv's kernel first, so notebooks run with this venv's python (lib
# installed) even where a user-wide "python3" kernel exists. Extra options: LAB_ARGS="--no-browser".
# As root (containers, CI) JupyterLab refuses to start without --allow-root.
LAB_ARGS ?=
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
lab: install
	JUPYTER_PATH="$(CURDIR)/$(VENV)/share/jupyter" $(BIN)/jupyter lab --notebook-dir=. $(LAB_ROOT) $(LAB_ARGS) book/

bench: install
	$(BIN)/python benchmarks/bench.py

clean:
	rm -rf _build

clean-notebooks: install
	$(BIN)/jupyter nbconvert --clear-output --inplace book/*.ipynb
