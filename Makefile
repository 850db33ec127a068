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
SEED   ?=
ARGS   ?=
# The suite runs in 4 pytest-xdist workers (the long files pinned and balanced by tests/conftest.py's
# WORKER_GROUPS, the rest handed out test by test): most of its time is real game timers and servers
# waiting, not CPU. WORKERS=0 runs it in one process.
WORKERS ?= 4

.PHONY: setup run test test-replicas lint bench train eval system-deps

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

# The shipped model, from data to model/weights/ (docs/TRAINING.md, "The recipe"). It starts from
# the two public Quick, Draw! models committed in model/public/ (their own weights, MIT) and teaches
# them our games. Each network trains from a preset of training/presets/ through `griffon train`,
# into a file of its own, and make runs two steps at a time (one per core) as soon as their inputs
# exist: the public models' answers on every training drawing, cached once (a few minutes); the
# public ResNet fine-tuned on our views toward the labels and its own untouched answer (50 epochs,
# about 50 minutes) beside the public DoodleNet fine-tuned the same way (54 epochs, about 20).
# Then the committee of the raster networks — both fine-tuned models and the untouched ResNet,
# pooled by their geometric mean, each at temperature 1 (a temperature fitted on the dev band, which the fine-tuned networks trained
# on, made it over-confident on validation: docs/TRAINING.md). Last, `griffon model ship` copies it to
# model/weights/ with its model card (the model measured beside the public models), int8 copy and
# categories.txt, and checks them. (The stroke-sequence members, `--preset sequence-untaught` and
# `sequence-taught`, no longer add to it: docs/EXPERIMENTS.md.)
# A step whose file exists is not run again: an interrupted `make train` goes on from the last
# finished step (`rm -r runs/` to start over).
GRIFFON := $(VENV)/bin/griffon
DATA_FLAG := $(if $(DATA),--data $(DATA))
# SEED=N trains every network of the chain with seed N instead of its preset's (another run of the
# recipe: `make runs/committee/model.pt SEED=1`, which ships nothing).
TRAIN := $(GRIFFON) train $(DATA_FLAG) $(if $(SEED),--seed $(SEED))
MODEL := $(GRIFFON) model
TEACHERS_CACHE := runs/teachers/answers.npz
TEACHERS_DIR := $(or $(GRIFFON_TEACHERS),model/public)
RESNET := runs/public-resnet/model.pt
DOODLENET := runs/public-doodlenet/model.pt
COMMITTEE := runs/committee/model.pt
.DELETE_ON_ERROR:

train: setup
	$(MAKE) -j2 $(COMMITTEE)
	$(MODEL) ship $(DATA_FLAG) --teachers $(TEACHERS_DIR) $(COMMITTEE)

$(TEACHERS_CACHE):
	$(GRIFFON) teachers cache $(DATA_FLAG) --out $@ --top-k 32
$(RESNET): $(TEACHERS_CACHE)
	$(TRAIN) --preset public-resnet $(ARGS)
$(DOODLENET): $(TEACHERS_CACHE)
	$(TRAIN) --preset public-doodlenet $(ARGS)
$(COMMITTEE): $(RESNET) $(DOODLENET)
	$(MODEL) committee $(RESNET) $(DOODLENET) public:quickdraw-resnet --out $@

eval: setup
	$(VENV)/bin/griffon eval $(if $(DATA),--data $(DATA)) --out reports/eval $(ARGS)
