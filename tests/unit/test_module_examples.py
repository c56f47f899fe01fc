"""Every module's EXAMPLES work as written: documented options, defined variables, real return keys.

An example an operator copies must not use a variable nothing sets, an option the module does
not have, or a return key the module does not give. This reads each module's EXAMPLES as the
tasks they are and checks, statically:
- the options of every jetson.specdec task are documented (DOCUMENTATION and its fragments);
- every variable a Jinja expression reads is an Ansible magic variable, or was set by an
  earlier task of the same EXAMPLES (register, set_fact, task vars), or is a documented role
  variable or fact of this collection's roles;
- ``<registered>.<key>`` reads a key the registering module documents in RETURN.
"""
import ast
import glob
import os

import pytest
import yaml
from jinja2 import Environment, meta, nodes

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODULES = sorted(glob.glob(os.path.join(REPO, "plugins", "modules", "*.py")))
FQCN = "jetson.specdec."

# What Ansible itself defines in every play (and Jinja globals Ansible adds).
MAGIC = {
    "ansible_facts", "hostvars", "groups", "group_names", "inventory_hostname", "ansible_play_hosts_all",
    "ansible_play_hosts", "playbook_dir", "omit", "item", "ansible_check_mode", "ansible_failed_result",
    "lookup", "query", "q", "now", "none", "true", "false", "range", "dict", "lipsum",
}
TASK_KEYWORDS = {
    "name", "register", "when", "vars", "delegate_to", "run_once", "loop", "loop_control", "failed_when",
    "changed_when", "check_mode", "become", "tags", "no_log", "ignore_errors", "notify", "environment",
    "async", "poll",
}
# Keys every module result has.
COMMON_RETURN = {"changed", "failed", "msg", "skipped", "rc"}


def _docstring(source, name):
    """The literal assigned to ``name`` at module level."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return node.value.value
    raise AssertionError("%s not found" % name)


def _fragment_options(names):
    options = {}
    for fragment in names or []:
        short = fragment.split(".")[-1]
        path = os.path.join(REPO, "plugins", "doc_fragments", short + ".py")
        with open(path) as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION":
                options.update((yaml.safe_load(node.value.value) or {}).get("options") or {})
    return options


def _module_doc(path):
    with open(path) as handle:
        source = handle.read()
    doc = yaml.safe_load(_docstring(source, "DOCUMENTATION"))
    options = dict(doc.get("options") or {})
    options.update(_fragment_options(doc.get("extends_documentation_fragment")))
    returns = yaml.safe_load(_docstring(source, "RETURN")) or {}
    examples = yaml.safe_load(_docstring(source, "EXAMPLES"))
    return options, returns, examples


DOCS = dict((os.path.basename(p)[:-3], _module_doc(p)) for p in MODULES)


def _role_names():
    """Documented role variables and the facts and results the roles set (a role in the play defines them)."""
    names = set()
    for spec in glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml")):
        with open(spec) as handle:
            for entry in (yaml.safe_load(handle)["argument_specs"] or {}).values():
                names.update((entry.get("options") or {}).keys())
    for tasks in glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml")):
        with open(tasks) as handle:
            for task in _walk_tasks(yaml.safe_load(handle) or []):
                names.update((task.get("ansible.builtin.set_fact") or {}).keys())
                if task.get("register"):
                    names.add(task["register"])
    return names


def _walk_tasks(tasks):
    for task in tasks:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _walk_tasks(task.get(key) or [])


ROLE_NAMES = _role_names()


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


class _AnyName(dict):
    """Every filter and test name exists here: this check is about variables, Ansible's own plugins resolve the rest."""

    def __contains__(self, name):
        return True

    def __missing__(self, name):
        return lambda *args, **kwargs: None

    def get(self, name, default=None):
        return self[name]


def _expressions(value, bare=False):
    """Jinja ASTs of the templates in ``value``; ``bare``: when/failed_when are expressions without braces."""
    env = Environment()
    env.filters = _AnyName(env.filters)
    env.tests = _AnyName(env.tests)
    for text in _strings(value):
        if bare and "{{" not in text:
            text = "{{ %s }}" % text
        if "{{" in text or "{%" in text:
            yield env.parse(text)


def _action(task):
    keys = [k for k in task if k not in TASK_KEYWORDS]
    assert len(keys) == 1, "a task with one action: %r" % (task,)
    return keys[0]


def _check_examples(module):
    options, _returns, examples = DOCS[module]
    assert isinstance(examples, list) and examples, "%s: EXAMPLES is a list of tasks" % module
    assert any(_action(t) == FQCN + module for t in examples), "%s: no example calls the module" % module
    defined = set(MAGIC) | ROLE_NAMES
    registered = {}
    problems = []
    for task in examples:
        action = _action(task)
        args = task[action] or {}
        defined.update((task.get("vars") or {}).keys())
        if action.startswith(FQCN):
            own = DOCS[action[len(FQCN):]][0]
            unknown = sorted(set(args) - set(own))
            if unknown:
                problems.append("%s: options %s are not documented by %s" % (task["name"], unknown, action))
        trees = list(_expressions([args, task.get("vars"), task.get("delegate_to"), task.get("loop")]))
        trees += list(_expressions([task.get(k) for k in ("when", "failed_when", "changed_when")], bare=True))
        for tree in trees:
            missing = sorted(meta.find_undeclared_variables(tree) - defined)
            if missing:
                problems.append("%s: reads %s, which nothing sets" % (task["name"], missing))
            for node in tree.find_all(nodes.Getattr):
                source = registered.get(getattr(node.node, "name", None))
                if isinstance(node.node, nodes.Name) and source and node.attr not in DOCS[source][1] \
                        and node.attr not in COMMON_RETURN:
                    problems.append("%s: %s.%s is not in %s's RETURN" % (task["name"], node.node.name, node.attr, source))
        if action == "ansible.builtin.set_fact":
            defined.update(args.keys())
        if task.get("register"):
            defined.add(task["register"])
            # an async task with poll 0 registers the job (ansible_job_id), not the module's result
            if action.startswith(FQCN) and not task.get("async"):
                registered[task["register"]] = action[len(FQCN):]
    return problems


@pytest.mark.parametrize("module", sorted(DOCS))
def test_examples_use_documented_options_defined_variables_and_real_return_keys(module):
    assert _check_examples(module) == []


def test_the_check_finds_a_variable_nothing_sets_and_an_unknown_return_key(monkeypatch):
    options, returns, examples = DOCS["vllm_wait"]
    broken = examples + [
        {"name": "Uses a fact that does not exist", "ansible.builtin.debug": {"msg": "{{ jetson_power_mode }}"}},
        {"name": "Reads a key vllm_wait does not return", "ansible.builtin.debug": {"msg": "{{ vllm_wait_result.served }}"}},
        {"name": "Passes an option vllm_wait does not have", "jetson.specdec.vllm_wait": {"url": "http://127.0.0.1:8000", "retries": 3}},
    ]
    monkeypatch.setitem(DOCS, "vllm_wait", (options, returns, broken))
    problems = _check_examples("vllm_wait")
    assert any("jetson_power_mode" in p for p in problems), problems
    assert any("vllm_wait_result.served" in p for p in problems), problems
    assert any("retries" in p for p in problems), problems
