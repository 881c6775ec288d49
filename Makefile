# One command installs and builds the book, one runs every test. Only Python 3.11+ is needed:
# the first target creates .venv and installs the project with its test tools into it.
# Independent prerequisites run side by side (the Chromium install beside the Python install).
MAKEFLAGS += --jobs=2
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: book pdf test lint bench serve clean browser

# uv (from PyPI, into the venv) installs in parallel, several times faster than pip; plain pip
# is the fallback where uv cannot be installed.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	($(BIN)/python -m pip install --quiet --disable-pip-version-check uv \
	  && $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[dev]') \
	  || $(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# The project's modules are compiled to bytecode before they run, as the install compiles the
# libraries' (0.2 s when nothing changed): where PYTHONDONTWRITEBYTECODE is set no process could
# keep what it compiled for the next, and a build would compile them all again (about 0.6 s of
# CPU), as would each of the dozens of Python processes of a test run (both xdist workers, the
# session's build, the CLI's and the builds' subprocesses, the notebooks' kernels).
COMPILE := $(BIN)/python -m compileall -q -j 0 units derivations book

book: $(STAMP)  ## install everything and build the site into site/
	$(COMPILE)
	$(BIN)/chalkboard build --out site

pdf: $(STAMP) browser  ## build the site and print the whole book to site/chalkboard.pdf
	$(COMPILE)
	$(BIN)/chalkboard build --out site --pdf

test: $(STAMP) browser  ## lint, doctests, unit/property/CLI tests, strict build, headless browser
	$(BIN)/ruff check .
	$(COMPILE) tests
	$(BIN)/python -m pytest -n auto --dist loadfile --no-loadscope-reorder

browser:  ## the system Chromium the browser tests drive (installed when missing and allowed)
	@bash .ci/install-browser

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)  ## print speed ratios measured in one run
	$(BIN)/python bench/run.py

serve: $(STAMP)  ## preview the site on http://127.0.0.1:8000, rebuilt when sources change
	$(COMPILE)
	$(BIN)/chalkboard serve

clean:
	rm -rf site build $(VENV)
