# TLX Workbench: two commands on a fresh machine (Python 3.11+, node/npm, no GPU needed)
#   make lab    install everything, then open JupyterLab on the first tutorial
#   make test   install everything (incl. headless Chromium), then run the whole test suite
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check
# The CPU build of torch that this machine keeps on local disk; no CUDA build, no second triton.
TORCH_CPU ?= torch==2.13.0
STAMP  := $(VENV)/.installed
# tools the builds call (jupyter, jlpm) come from the venv
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: install lab test test-fast lint browser-deps clean git-filters

$(STAMP): pyproject.toml extension/package.json extension/package-lock.json
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "$(TORCH_CPU)"
	# the editable install copies the built extension into the venv; a link serves each later `npm run build` instead
	rm -rf $(VENV)/share/jupyter/labextensions/tlx-workbench
	$(PIP) install -q -e ".[dev]"
	rm -rf $(VENV)/share/jupyter/labextensions/tlx-workbench
	ln -s $(CURDIR)/workbench/labextension $(VENV)/share/jupyter/labextensions/tlx-workbench
	cp extension/install.json workbench/labextension/
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (TLX Workbench)" >/dev/null
	$(MAKE) -s git-filters
	touch $(STAMP)

# .gitattributes names the filter for tutorials/*.ipynb; this defines it in the checkout (nothing outside a git one).
# Outputs, counts and what a kernel writes into the metadata on a run go; cell ids and the kernelspec (its name and
# display name: nbformat requires both) stay.
NBSTRIP := --keep-id --extra-keys 'metadata.language_info'
git-filters:
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
	  git config filter.nbstripout.clean "$(abspath $(PY)) -m nbstripout $(NBSTRIP)"; \
	  git config filter.nbstripout.smudge cat; \
	  git config diff.ipynb.textconv "$(abspath $(PY)) -m nbstripout $(NBSTRIP) -t"; fi

install: $(STAMP)

# Serves the repository (the file browser reaches kernels/ and tutorials/) and opens the first tutorial.
lab: install
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 $$([ "$$(id -u)" = 0 ] && echo --allow-root) \
	  --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/tutorials/01-producer-consumer-gemm.ipynb

browser-deps:
	@test -x /usr/bin/chromium || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "browser tests need Debian's chromium: sudo apt-get install chromium"; exit 1; fi; }

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

test: install browser-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	cd extension && npm test --silent
	$(PY) -m pytest -q

test-fast: install
	$(PY) -m pytest -q -m "not browser and not slow"

clean:
	rm -rf $(VENV) extension/node_modules extension/lib workbench/labextension
