"""The operator's hook settings (module_utils/common/hooks.py): checked on the controller before any host changes."""
import os

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.common.hooks import RULE, HookError, check


@pytest.fixture
def drain(tmp_path):
    path = tmp_path / "drain.yml"
    path.write_text("- name: Drain\n  ansible.builtin.debug:\n    msg: drain\n")
    return str(path)


def test_no_hooks_is_every_point_empty():
    assert check({}) == {"before_host": "", "before_restart": "", "after_host": ""}
    assert check(None) == check({"before_host": "", "after_host": None})


def test_an_absolute_readable_task_file_is_kept_normalized(drain):
    odd = os.path.join(os.path.dirname(drain), ".", "drain.yml")
    assert check({"before_host": odd, "after_host": drain}) == {"before_host": drain, "before_restart": "", "after_host": drain}


@pytest.mark.parametrize("value, words", [
    ("hooks/drain.yml", "must be an absolute path"),
    ("/etc/passwd", "must name a YAML task file"),
    ("/nonexistent/drain.yml", "not a readable file on the controller"),
    ("{{ inventory_dir }}/drain.yml", "template markup"),
    ("/tmp/a.yml\n- name: injected", "a line break"),
    (["/tmp/a.yml"], "must be the path of a task file"),
    (7, "must be the path of a task file"),
])
def test_a_hook_that_cannot_work_names_the_rule_the_variable_and_the_fix(value, words):
    with pytest.raises(HookError) as caught:
        check({"before_restart": value})
    text = str(caught.value)
    assert text.startswith(RULE + ":") and "rollout_hook_before_restart" in text and words in text, text
    assert "Fix:" in text


def test_a_directory_is_not_a_task_file(tmp_path):
    folder = tmp_path / "hooks.yml"
    folder.mkdir()
    with pytest.raises(HookError, match="not a readable file"):
        check({"after_host": str(folder)})


def test_an_unknown_hook_point_or_a_non_mapping_is_refused():
    with pytest.raises(HookError, match="unknown hook point.*before_reboot"):
        check({"before_reboot": "/tmp/x.yml"})
    with pytest.raises(HookError, match=RULE):
        check(["/tmp/x.yml"])
