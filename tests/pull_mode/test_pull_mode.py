"""pytest entry of the pull-mode test (`make integration-all` runs it; marked slow).

The scenario is tests/pull_mode/run_pull_mode.py (also runnable on its own); it needs the
test bed (Docker engine and board image, JETSON_SPECDEC_BOARD_IMAGE or testbed.sh).
"""
import importlib.util
import os

import pytest


def _scenario():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_pull_mode.py")
    spec = importlib.util.spec_from_file_location("run_pull_mode", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # ~5 min: make integration-all runs it (signed and unsigned commits); CI checks pull mode's inputs (test_pull_mode_inputs)
def test_pull_mode_timer_rollout_and_idempotent_second_fire():
    _scenario().main()


# ~2 min, in CI (make integration): a hostile pull_mode_extra_args on a real ansible-pull (issue 34)
def test_hostile_extra_args_are_refused_and_no_unsigned_commit_runs():
    _scenario().hostile_extra_args_main()
