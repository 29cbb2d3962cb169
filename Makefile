# The two commands: `make run` and `make test`. Each installs what is missing
# (system packages, .venv, the package with its native executables) and is
# quick when nothing changed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
NATIVE_SOURCES := $(shell find native -name '*.c' -o -name '*.h' -o -name '*.cmake' -o -name CMakeLists.txt) CMakeLists.txt pyproject.toml
# The editable install maps the package's files as they were when installed: a new module needs a reinstall.
PYTHON_SOURCES := $(shell find src -name '*.py' -o -name '*.json' -o -name '*.html' -o -name '*.css' -o -name '*.yml')
WERROR := $(if $(CI),ON,OFF)

.PHONY: run test install system clean

# The main job ends with the survey's HTML report in rmax-report/ (its path is printed last); figures
# measured on a busy node are named in it and in the summary, and do not fail it (--busy-ok).
run: install
	$(BIN)/rmax survey --out rmax-report --busy-ok

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

install: $(VENV)/.installed

system: $(VENV)/.system

$(VENV)/.system: scripts/install-system.sh
	./scripts/install-system.sh
	@mkdir -p $(VENV) && touch $@

$(BIN)/python: | $(VENV)/.system
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.deps: pyproject.toml $(BIN)/python
	$(BIN)/pip install -q "scikit-build-core>=0.8" "pytest>=7.4" "pytest-timeout>=2.2"
	$(BIN)/pip install -q $$($(BIN)/python scripts/dependencies.py)
	touch $@

# Editable install: edits to Python files are live; native changes and new files trigger this rule again.
$(VENV)/.installed: $(VENV)/.system $(VENV)/.deps $(NATIVE_SOURCES) $(PYTHON_SOURCES)
	RMAX_WERROR=$(WERROR) $(BIN)/pip install -q --no-build-isolation --no-deps -e .
	# Bytecode for the editable sources: where PYTHONDONTWRITEBYTECODE is set (containers, CI) every
	# rmax process would otherwise compile its 100-odd modules again (0.2 s CPU each start).
	$(BIN)/python -m compileall -q src
	touch $@

clean:
	rm -rf build $(VENV)
	find src -name __pycache__ -type d -prune -exec rm -rf {} +
