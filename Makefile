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

# The shipped model, from data to model/weights/ in one chain. Every network trains from a preset
# of training/presets/ through `griffon train`: ensemble member A (a 75-minute budget) beside the
# untaught stroke-sequence member (seed 1, 50 epochs), one core each; then the stroke-sequence member
# taught lightly by A (weight 0.3, 50 epochs, two threads, 37-42 minutes); then the raster student
# trained from scratch on A's softened answers (80 epochs, two threads, about 50 minutes): these
# steps took 2 h 26 min end to end on a fresh clone. Then the two public teachers' answers, cached
# once (read from $GRIFFON_TEACHERS, default ../shared/models/; about 2 minutes), teach that student
# further (--preset distilled: an 80-minute budget, one thread). Members B, C and D (their presets)
# are experiments, not in the recipe.
# Then softmax temperatures, each step writing a new file (no checkpoint is rewritten in place):
# the taught student's fitted on the dev band with its labels (runs/distilled/calibrated.pt: a
# student of soft targets is under-confident even on drawings it trained on; validation untouched);
# the two stroke-sequence members attached to it (a two-view model: the members averaged into one
# sequence view, pooled with the student by their normalised geometric mean;
# runs/distilled/attached.pt) and the temperature of the pool matched on dev to the student alone
# (runs/distilled/two-view.pt). Last, `griffon model ship` copies it to
# model/weights/griffon-default.pt, writes its model card, its int8 copy and categories.txt, and
# checks them (the weights load and verify; the int8 copy answers as the float model).
GRIFFON := $(VENV)/bin/griffon
DATA_FLAG := $(if $(DATA),--data $(DATA))
TRAIN := $(GRIFFON) train $(DATA_FLAG)
MODEL := $(GRIFFON) model
TEACHERS_CACHE := runs/teachers/answers.npz
train: setup
	$(TRAIN) --preset member-a & a=$$!; \
	  $(TRAIN) --preset sequence-untaught; u=$$?; \
	  wait $$a && test $$u -eq 0
	$(TRAIN) --preset sequence-taught
	$(TRAIN) --preset shipped
	test -f $(TEACHERS_CACHE) || $(PY) -m training.teachers cache $(DATA_FLAG) --out $(TEACHERS_CACHE) --top-k 32
	$(TRAIN) --preset distilled $(ARGS)
	$(MODEL) calibrate $(DATA_FLAG) --model runs/distilled/model.pt --split dev --trained-on \
		--out runs/distilled/calibrated.pt
	$(MODEL) attach --model runs/distilled/calibrated.pt --out runs/distilled/attached.pt \
		--member runs/sequence-untaught/sequence.pt runs/sequence-taught/sequence.pt
	$(MODEL) calibrate $(DATA_FLAG) --model runs/distilled/attached.pt --match runs/distilled/calibrated.pt \
		--out runs/distilled/two-view.pt
	$(MODEL) ship $(DATA_FLAG) runs/distilled/two-view.pt

# The taught student alone (its step of `make train`: the cache, then --preset distilled), from a
# student of A already in runs/shipped/.
distilled: setup
	test -f $(TEACHERS_CACHE) || $(PY) -m training.teachers cache $(DATA_FLAG) --out $(TEACHERS_CACHE) --top-k 32
	$(TRAIN) --preset distilled $(ARGS)

eval: setup
	$(VENV)/bin/griffon eval $(if $(DATA),--data $(DATA)) --out reports/eval $(ARGS)
