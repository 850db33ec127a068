# Griffon — two commands do everything on a fresh machine:
#   make run    start the service with the shipped model (sets itself up on first use)
#   make test   run the whole test suite (installs what the machine lacks)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.griffon-installed
HOST   ?= 127.0.0.1
PORT   ?= 8000
DATA   ?=
ARGS   ?=
# The suite runs in 4 pytest-xdist workers (the long files pinned and balanced by tests/conftest.py's
# WORKER_GROUPS, the rest handed out test by test): most of its time is real game timers and servers
# waiting, not CPU. WORKERS=0 runs it in one process.
WORKERS ?= 4

.PHONY: setup run test lint bench train calibrate eval system-deps

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

system-deps:
	bash .ci/system-deps

run: setup
	$(VENV)/bin/griffon serve --host $(HOST) --port $(PORT)

lint: setup
	$(PY) -m ruff check .

test: setup system-deps lint
	$(PY) -m pytest -q $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadgroup) $(ARGS)

bench: setup
	$(PY) -m bench $(ARGS)

# The shipped model (2 h 26 on 2 cores, measured once end to end on a fresh clone): ensemble
# member A (a 75-minute budget) beside the untaught stroke-sequence member (seed 1, 50 epochs), one
# core each; then the stroke-sequence member taught lightly by A (weight 0.3, 50 epochs, two threads,
# 37-42 minutes); then the raster student trained from scratch on A's softened answers (80
# epochs, two threads, about 50 minutes) (training/presets/*.yaml, training/sequence.py). Members
# B, C and D (their presets) are experiments, not in the recipe. To ship it: make calibrate (writes
# runs/shipped/two-view.pt: the student and the two stroke-sequence members); cp
# runs/shipped/two-view.pt model/weights/griffon-default.pt; python -m training.model_card --model
# model/weights/griffon-default.pt; python -m training.export
TRAIN := $(VENV)/bin/griffon train $(if $(DATA),--data $(DATA))
TEACHERS := runs/member-a/model.pt
SEQUENCE := $(PY) -m training.sequence $(if $(DATA),--data $(DATA)) --epochs 50 --minutes 0
MEMBER := $(SEQUENCE) --threads 2 --teacher $(TEACHERS) --distill-weight 0.3
UNTAUGHT := $(SEQUENCE) --threads 1 --seed 1
train: setup
	$(TRAIN) --preset member-a & a=$$!; \
	  $(UNTAUGHT) --out runs/sequence-untaught; u=$$?; \
	  wait $$a && test $$u -eq 0
	$(MEMBER) --out runs/sequence
	$(TRAIN) --preset shipped $(ARGS)

# Softmax temperatures: member A's fitted on the dev band with a run of its recipe that held dev out,
# then the student's matched to member A's probabilities on dev; then the two stroke-sequence members
# are attached (a two-view model: the members averaged into one sequence view, pooled with the student
# by their normalised geometric mean) and the temperature of the pool matched on dev to the student
# alone (training/calibrate.py).
calibrate: setup
	test -f runs/calibration/model.pt || $(TRAIN) --preset calibration
	$(PY) -m training.calibrate --model runs/calibration/model.pt --split dev \
		--apply-to runs/member-a/model.pt $(if $(DATA),--data $(DATA))
	$(PY) -m training.calibrate --model runs/shipped/model.pt --match runs/member-a/model.pt \
		$(if $(DATA),--data $(DATA))
	$(PY) -m training.sequence attach --model runs/shipped/model.pt --out runs/shipped/two-view.pt \
		--member runs/sequence-untaught/sequence.pt runs/sequence/sequence.pt
	$(PY) -m training.calibrate --model runs/shipped/two-view.pt --match runs/shipped/model.pt \
		$(if $(DATA),--data $(DATA))

eval: setup
	$(VENV)/bin/griffon eval $(if $(DATA),--data $(DATA)) --out reports/eval $(ARGS)
