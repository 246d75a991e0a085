# Two entry points do all the set-up themselves:
#   make demo   create .venv, install memaudit, solve and certify the quickstart package
#   make test   create .venv, install memaudit with test extras (and Debian's chromium, as root), type-check
#               solvers/ (mypy), run the tests
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test bench bench-sweep browser notebooks fuzz venv clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/memaudit solve packages_data/examples/quickstart.json

test: $(STAMP) browser
	$(BIN)/mypy solvers
	$(BIN)/python -m pytest -q

notebooks: $(STAMP)
	$(BIN)/python scripts/run_notebooks.py

fuzz: $(STAMP)
	MEMAUDIT_FUZZ_EXAMPLES=2000 $(BIN)/python -m pytest -q tests/test_fuzz_inputs.py

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_exact.py

bench-sweep: $(STAMP)
	$(BIN)/python benchmarks/bench_sweep.py

# headless Chromium (Debian's package) for tests/test_results_html.py; needs root, idempotent
browser:
	bash scripts/install_browser.sh

clean:
	rm -rf $(VENV) build *.egg-info
