# jetson.specdec — developer entry points.
#   make demo   simulated fleet + rollout + report (the README's first command)
#   make test   every test: unit, lint, sanity, molecule, real vLLM lane (the README's second command)
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.requirements-$(shell cat requirements.txt | sha256sum | cut -c1-12)
COLLECTIONS := $(CURDIR)/.cache/collections
COLL_LINK := $(COLLECTIONS)/ansible_collections/jetson/specdec
SANITY_TREE := $(CURDIR)/build/sanity/ansible_collections/jetson/specdec
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)
STAGE := tests/stage.sh
# CI (make test) runs the facts and vllm_server scenarios; the rollout scenario (four boards, ~10 min)
# tells the demo's story again, which the fleet tests (make integration) prove host by host, so it
# runs with molecule-all.
MOLECULE_SCENARIOS ?= facts vllm_server

.PHONY: help venv collection-path unit unit-integration lint sanity testbed molecule molecule-all integration integration-all real-lane real-lane-all lane-prepare release-check getting-started test demo demo-down clean

help:
	@echo "make demo      run the rollout on an embedded simulated fleet and print the report"
	@echo "make test      unit + lint + sanity + molecule + real vLLM lane (prints stage times)"
	@echo "make unit | unit-integration | lint | sanity | molecule | molecule-all | integration | integration-all | real-lane | real-lane-all | release-check | getting-started | demo-down | clean"

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	@rm -f $(VENV)/.requirements-*; touch $@

venv: $(STAMP)

# The collection is the repository root; Ansible finds it through this symlink tree.
collection-path:
	@mkdir -p $(dir $(COLL_LINK))
	@ln -sfn $(CURDIR) $(COLL_LINK)

# unit: pure and fast (no process, no server); unit-integration: the tests that start
# processes or loopback servers (target Pythons, the vLLM stand-ins, module runs).
unit: venv collection-path
	$(BIN)/pytest -q tests/unit

# testbed first: it installs the Docker engine, whose real CLI test_docker_daemon_down.py points at a dead socket.
# Two workers: most of these tests wait on subprocesses and servers (354 s in one, 212 s in two).
unit-integration: venv collection-path testbed
	bash tests/integration_py/ensure_chromium.sh
	bash tests/integration_py/ensure_promtool.sh
	$(BIN)/pytest -q -p no:cacheprovider -n 2 --durations=15 tests/integration_py tests/simulator/tests

lint: venv collection-path
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --profile production

# ansible-test needs a real ansible_collections/<ns>/<name> tree: copy the tracked files.
SANITY_VENV := .cache/sanity-venv
PIP_BOOTSTRAP_CACHE := $(HOME)/.ansible/test/cache

# ansible-test gets its own venv (its pinned linters must not fight ansible-lint's).
$(SANITY_VENV)/.ok: requirements.txt
	@test -x $(SANITY_VENV)/bin/python || $(PYTHON) -m venv $(SANITY_VENV)
	$(SANITY_VENV)/bin/pip install -q --disable-pip-version-check "$$(grep -o '^ansible-core[^ #]*' requirements.txt)"
	@touch $@

sanity: $(SANITY_VENV)/.ok
	@mkdir -p $(PIP_BOOTSTRAP_CACHE)
	@for v in $$($(SANITY_VENV)/bin/python -c "import re,ansible_test,os;p=os.path.join(os.path.dirname(ansible_test.__file__),'_internal','python_requirements.py');print(' '.join(set(re.findall(r\"pip='([0-9.]+)'\",open(p).read()))))"); do \
	  cp tests/sanity/get_pip_offline.py $(PIP_BOOTSTRAP_CACHE)/get_pip_$${v//./_}.py; done
	@$(PYTHON) -c "import json,os;json.dump({k:v for k,v in os.environ.items() if k.startswith('PIP_') and k not in ('PIP_CONFIG_FILE','PIP_REQUIRE_VIRTUALENV')},open('$(PIP_BOOTSTRAP_CACHE)/specdec-pip-env.json','w'))"
	@rm -rf $(SANITY_TREE) && mkdir -p $(SANITY_TREE)
	@git ls-files -co --exclude-standard -z | grep -zv '^\.cache/' | xargs -0 cp --parents -t $(SANITY_TREE) 2>/dev/null || true
	cd $(SANITY_TREE) && git init -q . && git add -A && \
	  $(CURDIR)/$(SANITY_VENV)/bin/ansible-test sanity --local --requirements --python 3.11 --color no

testbed:
	bash tests/testbed/testbed.sh all

molecule: venv collection-path testbed
	@set -e; for s in $(MOLECULE_SCENARIOS); do \
	  JETSON_SPECDEC_BASE_IMAGE=$$(bash tests/testbed/testbed.sh image | tail -n1) \
	  JETSON_SPECDEC_BOARD_IMAGE=$$(bash tests/testbed/testbed.sh board-image | tail -n1) \
	  $(BIN)/molecule test -s $$s; done

# Every scenario, with the whole bad-input matrix of vllm_server (CI runs one case per rule family).
molecule-all:
	JETSON_SPECDEC_MOLECULE_ALL=1 $(MAKE) --no-print-directory molecule MOLECULE_SCENARIOS="facts vllm_server rollout"

# Fleet-level tests on the test bed: rollout faults, canary, interruption, ladder, verdict loop,
# pull mode. Each module brings up its own containers, so two modules run at a time (a fleet test
# keeps the 2-core machine about half busy: Ansible waits on the boards). `make test` (CI) runs
# them without the `slow` ones (the state-directory and lock fault suites, the pull-mode timer, the
# clock hold, the plausibility rules, the hooks, k tuning, the watch, vLLM outside PATH and the LAN health check,
# ~50 min more); `make integration-all` runs everything. Two at a time: the
# fleets keep 2 cores busy (three at a time measured no faster, at a load average near 20).
INTEGRATION_MARK ?= not slow
INTEGRATION_WORKERS ?= 2
integration: venv collection-path testbed
	JETSON_SPECDEC_BOARD_IMAGE=$$(bash tests/testbed/testbed.sh board-image | tail -n1) \
	  $(BIN)/pytest -q -p no:cacheprovider -m "$(INTEGRATION_MARK)" -n $(INTEGRATION_WORKERS) --dist loadfile \
	  --durations=0 tests/rollout tests/pull_mode

integration-all:
	$(MAKE) --no-print-directory integration INTEGRATION_MARK="slow or not slow"

# The real vLLM lane: `make test` runs it without the `slow` tests (the keep/revert rollout, vllm_bench
# against `vllm bench serve`, the rejected-config, k-tuning and n-gram text rollouts; ~45 min more);
# `make real-lane-all` runs every lane test.
LANE_MARK ?= not slow
real-lane: venv collection-path
	bash tests/vllm_lane/run_lane.sh -m "$(LANE_MARK)" --durations=25

real-lane-all:
	$(MAKE) --no-print-directory real-lane LANE_MARK="slow or not slow"

# The lane's venv (pip, ~3.5 GB) and models, prepared in the background while the first stages
# run: downloads and unpacking, not the CPU the early stages use. run_lane.sh waits for it.
lane-prepare:
	bash tests/vllm_lane/prepare.sh

release-check: venv
	bash tests/release/release_check.sh

# docs/getting-started.md followed start to finish on a simulated fleet (~15 min; not part of `make test`).
getting-started: venv collection-path testbed
	JETSON_SPECDEC_BOARD_IMAGE=$$(bash tests/testbed/testbed.sh board-image | tail -n1) \
	  $(BIN)/python tests/getting_started/follow.py

test: venv collection-path
	@rm -f .cache/stage-times.txt
	@mkdir -p .cache; (bash tests/vllm_lane/prepare.sh >.cache/lane-prepare.log 2>&1 &)
	@$(STAGE) unit $(MAKE) --no-print-directory unit
	@$(STAGE) unit-integration $(MAKE) --no-print-directory unit-integration
	@$(STAGE) lint $(MAKE) --no-print-directory lint
	@$(STAGE) sanity $(MAKE) --no-print-directory sanity
	@$(STAGE) molecule $(MAKE) --no-print-directory molecule
	@$(STAGE) integration $(MAKE) --no-print-directory integration
	@$(STAGE) release-check $(MAKE) --no-print-directory release-check
	@$(STAGE) real-lane $(MAKE) --no-print-directory real-lane
	@echo; echo "Stage times:"; cat .cache/stage-times.txt

demo: venv collection-path testbed
	bash tests/demo/run_demo.sh

demo-down:
	python3 tests/testbed/fleet.py down tests/demo/fleet.json

clean:
	rm -rf build .cache/collections
