# The two commands of the quick start: `make book` and `make test`.
# Everything is installed into .venv from requirements.txt; nothing by hand. Every learner's and
# trainer's target is a plain Python command underneath (classroom/room.py: install, book, lab, bundle,
# hub), so that Windows and macOS need no make; make is the shorthand.
SHELL  := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Independent steps run side by side (the two editions' builds, nbval, the browser test).
JOBS   ?= 2
# `make lab BOOK_LANG=ja`: the Japanese learner notebooks, with Japanese figures and verdicts.
BOOK_LANG ?= en
# One thread per process: two processes share the two cores, and results do not depend on threading.
export OMP_NUM_THREADS ?= 1
export OPENBLAS_NUM_THREADS ?= 1
export MKL_NUM_THREADS ?= 1
NBVAL := -m pytest -q --nbval-lax --nbval-sanitize-with tests/sanitize.cfg -p no:cacheprovider

.PHONY: help install book html-en html-ja test test-fast lint test-lib test-notebooks test-i18n test-learner \
        test-learner-en test-learner-ja test-built test-build test-browser test-textlint test-robust translations lab lab-source trainer \
        bench lock clean learner-env bundle hub test-classroom

help:
	@echo "make install       create $(VENV) and install the book stack and lib"
	@echo "make book          both editions' HTML (_build/html, _build/html/ja) and the learner and"
	@echo "                   trainer notebooks (_build/notebooks/{en,ja}/)"
	@echo "make test          every test: lib, nbval on every chapter, strict builds of both editions,"
	@echo "                   the translation checker, the learner notebooks (structure and nbval),"
	@echo "                   every page in headless Chromium with no network"
	@echo "make test-fast     the fast tier, no build (about 2 min): ruff, the dependency files, lib's tests"
	@echo "make test-robust   every chapter's claims under each torch CPU kernel path and a second seed set"
	@echo "make trainer       the quiz handout and its answer key, both languages (_build/trainer/{en,ja}/)"
	@echo "make translations  refresh the Japanese catalogs (locales/) after an English edit"
	@echo "make lab           JupyterLab on the learner notebooks (BOOK_LANG=ja for the Japanese ones)"
	@echo "make lab-source    JupyterLab on the source chapters in book/ (for authors)"
	@echo "make learner-env   a learner's environment only ($(LEARNER_VENV)): what the notebooks need"
	@echo "make bundle        an offline classroom bundle (PLATFORM=linux|windows PY_VERSION=3.11|3.12)"
	@echo "make hub           install a cohort's JupyterHub into HUB_PREFIX (Linux server, as root)"
	@echo "make test-classroom  the learner environment, the offline bundle and a real JupyterHub, tested"
	@echo "make bench         time lib against PyTorch (benchmarks/)"
	@echo "make clean         remove _build (the execution caches included)"

# classroom/room.py install: torch's CPU build on a Linux machine without a GPU (PyTorch's CPU index,
# for torch only), unless pip's configuration already finds one (this machine's local wheels);
# TORCH_INDEX=cpu|pypi|local|URL overrides it. Then requirements.txt and lib (editable).
$(STAMP): requirements.txt constraints.txt pyproject.toml
	$(PYTHON) classroom/room.py install --venv $(VENV)
	touch $(STAMP)

install: $(STAMP)

# Each build is strict (-W -n --keep-going) and clears its own execution cache when lib/,
# requirements.txt or (Japanese) the translations of the strings code shows changed (tools/build.py).
html-en: install
	$(BIN)/python tools/build.py html en

html-ja: install
	$(BIN)/python tools/build.py html ja

# The trainer's quiz handout and answer key (book/trainer/quiz.md), outside the learners' book.
trainer: install
	$(BIN)/python tools/build.py trainer en
	$(BIN)/python tools/build.py trainer ja

book: install
	$(MAKE) -j$(JOBS) --output-sync=target html-en html-ja trainer
	@echo "Open _build/html/index.html (English: _build/html/book/intro.html, Japanese: _build/html/ja/book/intro.html)"
	@echo "Learner notebooks: _build/notebooks/en/learner, _build/notebooks/ja/learner (make lab)"

test: install
	$(MAKE) -k -j$(JOBS) --output-sync=target html-en html-ja lint test-lib test-notebooks test-i18n test-textlint \
	    test-learner-en test-learner-ja test-built test-browser

test-lib: install
	$(BIN)/python -m pytest -q -p no:nbval tests --ignore=tests/browser --ignore=tests/built --ignore=tests/classroom

# ruff with the rules the code's noqa comments assume (pyproject.toml [tool.ruff])
lint: install
	$(BIN)/ruff check lib tools tests classroom benchmarks

# the fast tier, no build: the linter, the dependency files against pyproject.toml, lib's tests with the
# source rules and the pin check (tests/test_upstream.py); about two minutes here
test-fast: install
	$(BIN)/ruff check lib tools tests classroom benchmarks
	$(BIN)/python tools/deps.py check
	$(MAKE) --no-print-directory test-lib

# nbval on every chapter: the MyST sources (book/<topic>.md) as the notebooks myst-nb executes, written
# to _build/nbval/<topic>.ipynb with each code cell's first line naming its source line (tools/chapters.py);
# the builds execute them too; both with the pages' claims strict (a failed claim is an error), while the
# learner notebooks (test-learner-*) run as a learner's do, where no claim check runs
test-notebooks: install
	rm -rf _build/nbval
	$(BIN)/python tools/chapters.py notebooks _build/nbval > /dev/null
	BOOK_CLAIMS=strict $(BIN)/python $(NBVAL) _build/nbval

# every claim of every chapter under each of torch's CPU kernel paths this CPU has, and on a second seed
# set (tools/robust.py; the table goes to _build/robust/report.md); run by .ci/run
test-robust: html-en
	$(BIN)/python tools/robust.py

# the strict builds of both editions
test-build: html-en html-ja

# the catalogs are up to date with the English, nothing is fuzzy, markup survived translation
test-i18n: html-en
	$(BIN)/python tools/build.py gettext > _build/gettext.log 2>&1 || { tail -40 _build/gettext.log; exit 1; }
	$(BIN)/python tools/catalogs.py check

# textlint with the Japanese technical-writing presets over every catalog's Japanese, the glossary as
# termbase (prh); npm packages pinned by locales/textlint/package-lock.json, installed there (gitignored)
TEXTLINT := locales/textlint/node_modules/.bin/textlint
$(TEXTLINT): locales/textlint/package.json locales/textlint/package-lock.json
	npm ci --prefix locales/textlint --no-audit --no-fund --loglevel=error
	touch $(TEXTLINT)

test-textlint: install $(TEXTLINT)
	$(BIN)/python tools/jalint.py lint

# the learner notebooks run top to bottom, in each language
test-learner-en: html-en
	$(BIN)/python $(NBVAL) _build/notebooks/en/learner

test-learner-ja: html-ja
	$(BIN)/python $(NBVAL) _build/notebooks/ja/learner

test-learner: test-learner-en test-learner-ja test-built

# the learner notebooks read like the pages and give no answer away
test-built: html-en html-ja
	$(BIN)/python -m pytest -q tests/built

# every page of both editions in headless Chromium, offline, at 1366 x 900, and the learner notebook
# in JupyterLab. Skips with a message where Chromium is missing (REQUIRE_BROWSER_TEST=1: a failure).
test-browser: html-en html-ja
	$(BIN)/python -m pytest -q tests/browser

translations: install
	$(BIN)/python tools/catalogs.py update

# JUPYTER_PATH puts this venv's kernel first, so notebooks run with this venv's python (lib
# installed) even where a user-wide "python3" kernel exists. Extra options: LAB_ARGS="--no-browser".
# As root (containers, CI) JupyterLab refuses to start without --allow-root.
LAB_ARGS ?=
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
LAB_ENV  := JUPYTER_PATH="$(CURDIR)/$(VENV)/share/jupyter" BOOK_LANG=$(BOOK_LANG)
# Opens the learner notebooks already built (a _build/ copied from the trainer will do); builds that
# edition first only when they are missing. After editing a chapter: make book.
lab: install
	$(BIN)/python classroom/room.py lab --venv $(VENV) --lang $(BOOK_LANG) --build -- $(LAB_ARGS)

# The chapters are MyST Markdown notebooks: jupytext (installed) opens them as notebooks in JupyterLab
# (right-click, Open With, Jupytext Notebook) and saves them back as text.
lab-source: install
	$(LAB_ENV) $(BIN)/jupyter lab $(LAB_ROOT) $(LAB_ARGS) --notebook-dir=book

# --- the training room (classroom/README.md) ---------------------------------------------
LEARNER_VENV ?= .venv-learner
PLATFORM     ?= linux
PY_VERSION   ?= 3.11
HUB_PREFIX   ?= /opt/sdpa-hub
HUB_PYTHON   ?= /usr/bin/python3

learner-env:
	$(PYTHON) classroom/room.py install --learner --venv $(LEARNER_VENV)

bundle: book
	$(BIN)/python -m pip install --quiet -r classroom/requirements-trainer.txt
	$(BIN)/python classroom/room.py bundle --platform $(PLATFORM) --python $(PY_VERSION) --lang $(BOOK_LANG) --archive

hub: book
	$(BIN)/python classroom/room.py hub --prefix $(HUB_PREFIX) --python $(HUB_PYTHON)

# A fresh learner environment runs every learner notebook of both languages; the Linux bundle installs with
# every index disabled and runs them; the Windows bundle is built; a real JupyterHub with two unix
# users (created when root; skipped otherwise, REQUIRE_CLASSROOM_TEST=1 makes a skip a failure).
test-classroom: html-en html-ja
	$(BIN)/python -m pip install --quiet -r classroom/requirements-trainer.txt
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/classroom

bench: install
	$(BIN)/python benchmarks/bench.py

# After a deliberate upgrade of the book stack (pip install ... into .venv): write the versions now
# installed into constraints.txt, then run `pytest tests/test_upstream.py` (it names the patches to re-check).
lock: install
	{ sed -n '1,/^[a-zA-Z]/{/^#/p}' constraints.txt; \
	  $(BIN)/python -m pip freeze --exclude-editable | sed 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/' \
	  | grep -v -i -E '^(uv|sdpa-course-lib)=='; } > constraints.txt.new && mv constraints.txt.new constraints.txt

clean:
	rm -rf _build
