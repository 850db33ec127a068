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

.PHONY: setup run test test-replicas lint bench train distilled eval system-deps

$(STAMP): pyproject.toml
	@echo "griffon: setting up $(VENV) with Griffon and its libraries (first run only, a few minutes)..."
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --progress-bar off -e '.[dev]'
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

# Three replicas on one PostgreSQL database behind HAProxy (deploy/, docs/DEPLOY.md): tables played
# through the balancer, a replica killed and paused mid-game (tests/test_replicas.py).
test-replicas: setup system-deps
	$(PY) -m pytest -q -m replicas tests/test_replicas.py $(ARGS)

bench: setup
	$(PY) -m bench $(ARGS)

# The shipped model, from data to model/weights/ in one chain (2 h 26 of training on 2 cores,
# measured once end to end on a fresh clone). Every network trains from a preset of
# training/presets/ through `griffon train`: ensemble member A (a 75-minute budget) beside the
# untaught stroke-sequence member (seed 1, 50 epochs), one core each; then the stroke-sequence member
# taught lightly by A (weight 0.3, 50 epochs, two threads, 37-42 minutes); then the raster student
# trained from scratch on A's softened answers (80 epochs, two threads, about 50 minutes). Members
# B, C and D (their presets) are experiments, not in the recipe.
# Then softmax temperatures, each step writing a new file (no checkpoint is rewritten in place):
# member A's fitted on the dev band with a run of its recipe that held dev out (runs/calibration/,
# trained first when absent: about 75 minutes more) (runs/member-a/calibrated.pt); the student's matched to member A's probabilities on dev
# (runs/shipped/calibrated.pt); the two stroke-sequence members attached to it (a two-view model:
# the members averaged into one sequence view, pooled with the student by their normalised
# geometric mean; runs/shipped/attached.pt) and the temperature of the pool matched on dev to the
# student alone (runs/shipped/two-view.pt). Last, `griffon model ship` copies it to
# model/weights/griffon-default.pt, writes its model card, its int8 copy and categories.txt, and
# checks them (the weights load and verify; the int8 copy answers as the float model).
GRIFFON := $(VENV)/bin/griffon
DATA_FLAG := $(if $(DATA),--data $(DATA))
TRAIN := $(GRIFFON) train $(DATA_FLAG)
MODEL := $(GRIFFON) model
train: setup
	$(TRAIN) --preset member-a & a=$$!; \
	  $(TRAIN) --preset sequence-untaught; u=$$?; \
	  wait $$a && test $$u -eq 0
	$(TRAIN) --preset sequence-taught
	$(TRAIN) --preset shipped $(ARGS)
	test -f runs/calibration/model.pt || $(TRAIN) --preset calibration
	$(MODEL) calibrate $(DATA_FLAG) --model runs/calibration/model.pt --split dev \
		--apply-to runs/member-a/model.pt --out runs/member-a/calibrated.pt
	$(MODEL) calibrate $(DATA_FLAG) --model runs/shipped/model.pt --match runs/member-a/calibrated.pt \
		--out runs/shipped/calibrated.pt
	$(MODEL) attach --model runs/shipped/calibrated.pt --out runs/shipped/attached.pt \
		--member runs/sequence-untaught/sequence.pt runs/sequence-taught/sequence.pt
	$(MODEL) calibrate $(DATA_FLAG) --model runs/shipped/attached.pt --match runs/shipped/calibrated.pt \
		--out runs/shipped/two-view.pt
	$(MODEL) ship $(DATA_FLAG) runs/shipped/two-view.pt

# The raster student of the two public teachers (docs/TRAINING.md, "Learning from the public
# teachers"): their answers cached once (read from $GRIFFON_TEACHERS, default ../shared/models/), then
# `griffon train --preset distilled`. Not part of `make train`.
TEACHERS_CACHE := runs/teachers/answers.npz
distilled: setup
	test -f $(TEACHERS_CACHE) || $(PY) -m training.teachers cache $(DATA_FLAG) --out $(TEACHERS_CACHE) --top-k 32
	$(TRAIN) --preset distilled $(ARGS)

eval: setup
	$(VENV)/bin/griffon eval $(if $(DATA),--data $(DATA)) --out reports/eval $(ARGS)
