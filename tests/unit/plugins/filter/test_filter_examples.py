# -*- coding: utf-8 -*-
# Copyright (c) 2026 jetson.specdec contributors
# SPDX-License-Identifier: Apache-2.0
"""Every filter's EXAMPLES run: each task's set_fact/debug Jinja renders with only the task's own vars.

The EXAMPLES of plugins/filter/<name>.yml are a YAML list of tasks.  Each task gives every input literally in
its ``vars:`` and calls the filter by its FQCN, so an operator reads what goes in; the ``# var => value`` comment
after it shows what comes out.  This test renders them the way Ansible would (native types, strict undefined,
ansible.builtin filters, every filter of this collection under ``jetson.specdec.<name>``): an example that uses an
unset variable, a filter that does not exist, or that raises, fails here.
"""
import functools
import glob
import importlib
import itertools
import os
import re

import jinja2
import pytest
import yaml
from jinja2.nativetypes import NativeEnvironment

from ansible.plugins.filter.core import FilterModule as CoreFilters
from ansible.plugins.filter.mathstuff import FilterModule as MathFilters
from ansible.plugins.filter.urls import FilterModule as UrlFilters

FILTER_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "plugins", "filter"))
DOC_FILES = sorted(glob.glob(os.path.join(FILTER_DIR, "*.yml")))
FILTER_MODULES = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(FILTER_DIR, "*.py"))
                        if not os.path.basename(p).startswith("_"))
TEMPLATED = ("set_fact", "ansible.builtin.set_fact", "debug", "ansible.builtin.debug")
NOT_FACTS = ("cacheable",)  # set_fact options, not facts


def collection_filters():
    """{name: function} of every FilterModule in plugins/filter, imported by its FQCN path."""
    found = {}
    for module in FILTER_MODULES:
        mod = importlib.import_module("ansible_collections.jetson.specdec.plugins.filter.%s" % module)
        for name, func in mod.FilterModule().filters().items():
            assert name not in found, "filter %s is defined twice" % name
            found[name] = func
    return found


FILTERS = collection_filters()


def ansible_concat(nodes):
    """A template that is one expression gives its value; anything else is a string.

    jinja2's own native_concat also runs ast.literal_eval on string results (so a quoted JSON argument would lose its
    quotes); ansible-core 2.19 no longer converts strings that way.
    """
    head = list(itertools.islice(nodes, 2))
    if not head:
        return None
    if len(head) == 1:
        return head[0]
    return "".join(str(node) for node in itertools.chain(head, nodes))


class AnsibleLikeEnvironment(NativeEnvironment):
    concat = staticmethod(ansible_concat)


def find_undefined(value):
    """The first jinja2 Undefined in ``value`` (nested in dicts and lists too), or None."""
    if isinstance(value, jinja2.Undefined):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return next((found for found in (find_undefined(item) for item in items) if found is not None), None)


def refusing_undefined(func):
    """``func`` failing on an undefined argument, as ansible-core 2.19 fails a plugin call (a filter that reads
    only part of its input, or plain() that passes objects through, would not notice it)."""
    @functools.wraps(func)
    def call(*args, **kwargs):
        undefined = find_undefined(list(args) + list(kwargs.values()))
        if undefined is not None:
            undefined._fail_with_undefined_error()  # pylint: disable=protected-access
        return func(*args, **kwargs)
    return call


def environment():
    env = AnsibleLikeEnvironment(undefined=jinja2.StrictUndefined)
    for plugin in (CoreFilters, MathFilters, UrlFilters):
        for name, func in plugin().filters().items():
            func = func if name == "mandatory" else refusing_undefined(func)
            env.filters[name] = func
            env.filters["ansible.builtin." + name] = func
    for name, func in FILTERS.items():
        env.filters["jetson.specdec." + name] = refusing_undefined(func)
    env.globals.update({"none": None, "true": True, "false": False, "True": True, "False": False, "None": None})
    return env


ENV = environment()


class TaskVars(object):
    """A task's ``vars:``, each templated when first used (as Ansible does), so one var may use another."""

    def __init__(self, raw):
        self.raw, self.done, self.busy = dict(raw or {}), {}, set()

    def __contains__(self, key):
        return key in self.raw or key in ENV.globals

    def __getitem__(self, key):
        if key not in self.raw:
            return ENV.globals[key]
        if key not in self.done:
            if key in self.busy:
                raise AssertionError("var %s refers to itself" % key)
            self.busy.add(key)
            self.done[key] = render(self.raw[key], self)
            self.busy.discard(key)
        return self.done[key]


def render(value, variables):
    """``value`` with every Jinja string in it rendered (natively) against ``variables`` (a TaskVars)."""
    if isinstance(value, dict):
        return dict((key, render(item, variables)) for key, item in value.items())
    if isinstance(value, list):
        return [render(item, variables) for item in value]
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        template = ENV.from_string(value)
        # shared=True: the template reads the vars through TaskVars instead of a copy of all of them
        result = ENV.concat(template.root_render_func(template.new_context(variables, shared=True)))
        undefined = find_undefined(result)  # "{{ unset }}" or "{{ [unset] }}" gives Undefined objects, not an error
        if undefined is not None:
            undefined._fail_with_undefined_error()  # pylint: disable=protected-access
        return result
    return value


def load(path):
    with open(path) as handle:
        doc = yaml.safe_load(handle)
    examples = yaml.safe_load(doc["EXAMPLES"]) or []
    return doc, examples


def module_args(task):
    """(action, args) of the task's set_fact or debug, or (None, None)."""
    for action in TEMPLATED:
        if action in task:
            return action, task[action]
    return None, None


def templated(task):
    """{output name: Jinja text} the task renders: set_fact facts, debug msg (or var as an expression)."""
    action, args = module_args(task)
    if action is None:
        return {}
    if action.endswith("set_fact"):
        return dict((key, value) for key, value in args.items() if key not in NOT_FACTS)
    if "var" in args:
        return {"var": "{{ %s }}" % args["var"]}
    return {"msg": args["msg"]}


def run_task(task):
    """{output name: rendered value}: every var of the task first (a var may be Jinja too), then the outputs."""
    variables = TaskVars(task.get("vars"))
    for key in variables.raw:
        variables[key]  # pylint: disable=pointless-statement  # a var that does not render fails the example
    return dict((key, render(text, variables)) for key, text in templated(task).items())


def strings(value):
    """Every string in ``value``, nested ones too (the Jinja a task renders)."""
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    return [value] if isinstance(value, str) else []


def ids(paths):
    return [os.path.basename(p) for p in paths]


def test_every_filter_has_a_documentation_file_and_back():
    names = set(os.path.splitext(os.path.basename(p))[0] for p in DOC_FILES)
    assert names == set(FILTERS)


@pytest.mark.parametrize("path", DOC_FILES, ids=ids(DOC_FILES))
def test_examples_are_tasks_that_call_the_filter_with_literal_inputs(path):
    doc, examples = load(path)
    name = doc["DOCUMENTATION"]["name"]
    assert os.path.basename(path) == name + ".yml"
    assert isinstance(examples, list) and examples, "EXAMPLES of %s must be a YAML list of tasks" % name
    fqcn = "jetson.specdec." + name
    for task in examples:
        assert isinstance(task, dict) and task.get("name"), "every example is a named task: %r" % (task,)
        action, args = module_args(task)
        assert action, "task %r uses neither ansible.builtin.set_fact nor ansible.builtin.debug" % task["name"]
        assert templated(task), "task %r sets nothing" % task["name"]
        calls = re.compile(r"\|\s*%s\b" % re.escape(fqcn))  # "| jetson.specdec.<name>", not <name>_headroom
        assert any(calls.search(text) for text in strings(templated(task))), \
            "task %r does not call %s" % (task["name"], fqcn)
        for out in templated(task) if action.endswith("set_fact") else ():
            # the comment after the task shows what comes out: "# <var> => ..." or "# <var>.key => ..."
            assert re.search(r"^\s*#\s*%s\b.*=>" % re.escape(out), doc["EXAMPLES"], re.M), \
                "no '# %s => ...' comment shows what task %r sets" % (out, task["name"])


@pytest.mark.parametrize("path", DOC_FILES, ids=ids(DOC_FILES))
def test_examples_render(path):
    _doc, examples = load(path)
    for task in examples:
        try:
            results = run_task(task)
        except Exception as exc:  # the task's name tells the reader which example broke
            raise AssertionError("%s, task %r: %s: %s" % (os.path.basename(path), task.get("name"),
                                                          type(exc).__name__, exc))
        assert results and all(value is not None for value in results.values())


def test_an_unset_variable_fails_the_render():
    with pytest.raises(jinja2.UndefinedError):
        run_task({"name": "x", "ansible.builtin.set_fact": {"y": "{{ nothing_sets_this | jetson.specdec.systemd_quote }}"}})


def test_an_unset_variable_inside_an_input_fails_the_render():
    with pytest.raises(jinja2.UndefinedError):
        run_task({"name": "x", "ansible.builtin.set_fact": {"y": "{{ [{'a': unset}] | jetson.specdec.vllm_failure_cause }}"}})


def test_a_var_that_does_not_render_fails_even_when_unused():
    with pytest.raises(jinja2.UndefinedError):
        run_task({"name": "x", "vars": {"a": "{{ unset }}"}, "ansible.builtin.set_fact": {"y": "{{ 'x' | jetson.specdec.systemd_quote }}"}})


def test_vars_may_use_each_other_in_any_order():
    task = {"name": "x", "vars": {"b": "{{ a }}/x", "a": "/opt"}, "ansible.builtin.set_fact": {"y": "{{ [b] | jetson.specdec.systemd_command_line }}"}}
    assert run_task(task) == {"y": "/opt/x"}


def test_a_quoted_string_stays_a_string():
    # jinja2's native_concat would literal_eval the quoted JSON back into an unquoted string
    task = {"name": "x", "vars": {"j": '{"k":1}'}, "ansible.builtin.set_fact": {"y": "{{ j | jetson.specdec.systemd_quote }}"}}
    assert run_task(task) == {"y": '"{\\"k\\":1}"'}


def test_an_unknown_filter_fails_the_render():
    with pytest.raises(jinja2.TemplateAssertionError):
        run_task({"name": "x", "vars": {"a": 1}, "ansible.builtin.set_fact": {"y": "{{ a | jetson.specdec.no_such_filter }}"}})
