"""vllm_switch renders the role's unit with the template lookup, giving it the task's variables copied
shallowly (as the template action copies them): the same text, without a deep copy of every fact."""
import copy

from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader
from ansible.template import Templar

from ansible_collections.jetson.specdec.plugins.action.vllm_switch import TaskVars


class Copied(object):
    """A value that counts its deep copies."""
    deep = 0

    def __deepcopy__(self, memo):
        Copied.deep += 1
        return Copied()


def _render(tmp_path, variables):
    (tmp_path / "templates").mkdir(exist_ok=True)
    (tmp_path / "templates" / "unit.j2").write_text(
        "{{ ansible_managed | comment }}\nExecStart={{ vllm_server_launch.argv | join(' ') }}\n"
        "User={{ vllm_server_user }}\n")
    loader = DataLoader()
    lookup = lookup_loader.get("template", loader=loader, templar=Templar(loader=loader))
    return lookup.run(["unit.j2"], variables=variables, template_vars={"vllm_server_launch": {"argv": ["vllm", "serve"]}})[0]


def test_the_unit_renders_the_same_from_a_shallow_copy(tmp_path):
    task_vars = {"vllm_server_user": "vllm", "role_path": str(tmp_path), "ansible_search_path": [str(tmp_path)],
                 "rollout_rounds": [{"requests": [{"tpot_ms": 12.5}] * 3}]}
    deep = _render(tmp_path, dict(task_vars, ansible_search_path=[str(tmp_path)]))
    shallow = _render(tmp_path, TaskVars(dict(task_vars, ansible_search_path=[str(tmp_path)])))
    assert shallow == deep
    assert "ExecStart=vllm serve\nUser=vllm\n" in shallow


def test_the_lookup_copies_no_fact_deeply():
    Copied.deep = 0
    fact = Copied()
    task_vars = TaskVars({"rollout_rounds": fact})
    copied = copy.deepcopy(task_vars)
    assert copied["rollout_rounds"] is fact and Copied.deep == 0
    # a new dict: the lookup adds its template_* variables to the copy, not to the task's variables
    assert copied is not task_vars and not isinstance(copied, TaskVars)
    copied["template_path"] = "unit.j2"
    assert "template_path" not in task_vars
    copy.deepcopy({"rollout_rounds": fact})  # a plain dict is copied deeply: the counter sees it
    assert Copied.deep == 1
