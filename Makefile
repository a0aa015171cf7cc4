# make run: set up (venv, packages, demo index) and start the app.  make test: set up, lint (ruff) and run the tests.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO := assets/packs/demo
HOST ?= 127.0.0.1
PORT ?= 8501
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False

SMOLLM := $(VENV)/models/SmolLM2-135M-Instruct.Q4_1.gguf

.PHONY: run test venv index bench browser-deps clean model

venv: $(STAMP)

$(STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt > $(VENV)/pip.log 2>&1 \
		|| (cat $(VENV)/pip.log; exit 1)
	$(PY) -m pip check
	touch $(STAMP)

index: $(STAMP)
	$(PY) -m engine index --pack $(DEMO)

run: $(STAMP)
	$(PY) -m engine index --pack $(DEMO)
	$(VENV)/bin/streamlit run app.py --server.address $(HOST) --server.port $(PORT)

test: $(STAMP) $(SMOLLM)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

# A small real instruct model (SmolLM2-135M-Instruct, GGUF, Apache-2.0) for the `llm` tests and benches.
model: $(SMOLLM)

$(SMOLLM): scripts/fetch_model.py | $(STAMP)
	$(PY) scripts/fetch_model.py --out $(VENV)/models

bench: $(STAMP)
	$(PY) bench/retrieval.py
	$(PY) bench/methods.py
	$(PY) bench/ui.py
	$(PY) bench/hostile.py
	$(PY) bench/tour.py

# Debian's Chromium for the real-browser test (never `playwright install`: it downloads a browser).
browser-deps:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium chromium-driver)

clean:
	rm -rf $(VENV) .pytest_cache
