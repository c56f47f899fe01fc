"""vllm_switch renders the role's unit with the template lookup, giving it the task's variables copied
shallowly (as the template action copies them): the same text, without a deep copy of every fact."""
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import lookup_loader
from ansible.template import Templar

from ansible_collections.jetson.specdec.plugins.action import vllm_switch
from ansible_collections.jetson.specdec.plugins.action.vllm_switch import ActionModule, TaskVars


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


class ShortNames(object):
    """The lookup loader, finding ansible.builtin plugins by their short names (a unit test has no
    collection finder to resolve ansible.builtin.*)."""

    @staticmethod
    def get(name, **kwargs):
        return lookup_loader.get(name.replace("ansible.builtin.", ""), **kwargs)


def _action(loader, monkeypatch):
    """vllm_switch's action with only what its _render uses (the loader and the task's templar)."""
    monkeypatch.setattr(vllm_switch, "lookup_loader", ShortNames)
    action = ActionModule.__new__(ActionModule)
    action._loader, action._templar = loader, Templar(loader=loader)
    return action


def test_the_lookup_copies_no_fact_deeply(tmp_path, monkeypatch):
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "unit.j2").write_text("ExecStart={{ vllm_server_launch.argv | join(' ') }}\n")
    task_vars = {"role_path": str(tmp_path), "ansible_search_path": [str(tmp_path)], "rollout_rounds": Copied()}
    action = _action(DataLoader(), monkeypatch)
    Copied.deep = 0
    # the switch's own rendering, through the template lookup: the fact is not copied
    assert action._render("unit.j2", {"argv": ["vllm", "serve"]}, task_vars) == "ExecStart=vllm serve\n"
    assert Copied.deep == 0
    assert "template_path" not in task_vars  # the lookup adds its variables to a copy, not to the task's
    # the lookup given the plain variables copies the fact deeply: the counter sees it
    lookup = lookup_loader.get("template", loader=action._loader, templar=action._templar)
    lookup.run(["unit.j2"], variables=task_vars, template_vars={"vllm_server_launch": {"argv": []}})
    assert Copied.deep >= 1
