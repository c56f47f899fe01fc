"""execution-environment.yml (ansible-builder 3.x) names what the collection needs.

The image itself is not built here (its base image comes from a registry); this test
checks the definition against the collection: schema version, ansible-core range vs
meta/runtime.yml and requirements.txt, ansible-runner, the controller-side Python
requirements of the plugins, and the step that installs this collection's tarball.
"""
import ast
import os
import re

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOP_LEVEL = {"version", "images", "dependencies", "additional_build_files", "additional_build_steps",
             "build_arg_defaults", "options"}
BUILD_STEPS = {"prepend_base", "append_base", "prepend_galaxy", "append_galaxy", "prepend_builder",
               "append_builder", "prepend_final", "append_final"}


def _load(path):
    with open(os.path.join(REPO, path)) as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def ee():
    return _load("execution-environment.yml")


def _specifiers(requirement):
    """'ansible-core>=2.17.0,<2.20' -> [('>=', (2, 17, 0)), ('<', (2, 20))]"""
    return [(op, tuple(int(p) for p in ver.split("."))) for op, ver in re.findall(r"(>=|<=|==|<|>)\s*([0-9.]+[0-9])", requirement)]


def test_schema_version_3_and_known_sections(ee):
    assert ee["version"] == 3
    assert set(ee) <= TOP_LEVEL, set(ee) - TOP_LEVEL
    assert set(ee.get("additional_build_steps", {})) <= BUILD_STEPS
    assert ee["images"]["base_image"]["name"]


def test_base_image_names_no_registry_host(ee):
    first = ee["images"]["base_image"]["name"].split("/")[0]
    assert first == "localhost" or not re.search(r"[.:]", first), "use a local tag, not a registry host: %s" % first


def test_ansible_core_range_matches_the_collection(ee):
    wanted = ee["dependencies"]["ansible_core"]["package_pip"]
    assert wanted.startswith("ansible-core")
    spec = dict(_specifiers(wanted))
    runtime = _load("meta/runtime.yml")["requires_ansible"]
    floor = dict(_specifiers(runtime))[">="]
    assert spec[">="] == floor, "EE floor %s != meta/runtime.yml requires_ansible %s" % (spec[">="], runtime)
    with open(os.path.join(REPO, "requirements.txt")) as handle:
        tested = re.search(r"^ansible-core([^ #\n]*)", handle.read(), re.M).group(1)
    assert spec["<"] == dict(_specifiers(tested))["<"], "EE ceiling must be the tested ansible-core ceiling (%s)" % tested


def test_ansible_runner_for_awx(ee):
    assert ee["dependencies"]["ansible_runner"]["package_pip"].startswith("ansible-runner")


def test_python_requirements_of_the_plugins(ee):
    """Every third-party import of the controller-side plugins is in dependencies.python."""
    names = {re.split(r"[<>=!~ \[]", item, maxsplit=1)[0].lower() for item in ee["dependencies"].get("python", [])}
    third_party = set()
    for base, _dirs, files in os.walk(os.path.join(REPO, "plugins")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(base, name)) as handle:
                    tree = ast.parse(handle.read())
                # The parsed imports, not lines that start with "from" (a docstring may).
                for node in ast.walk(tree):
                    if isinstance(node, ast.Import):
                        third_party.update(alias.name.split(".")[0] for alias in node.names)
                    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                        third_party.add(node.module.split(".")[0])
    import sys
    from importlib import metadata
    stdlib = set(sys.stdlib_module_names) | {"ansible", "ansible_collections", "__future__"}
    # ansible-core's own requirements (jinja2 for the report's template, yaml, ...) come with it
    core = {re.split(r"[<>=!~ ;\[]", item, maxsplit=1)[0].lower() for item in metadata.requires("ansible-core") or []}
    core |= {"yaml"} if "pyyaml" in core else set()  # PyYAML imports as yaml
    missing = sorted(m.lower() for m in third_party - stdlib if m.lower() not in names | core)
    assert not missing, "plugins import %s; add them to dependencies.python" % missing


def test_installs_this_collection(ee):
    galaxy = _load("galaxy.yml")
    tarball = "%s-%s-" % (galaxy["namespace"], galaxy["name"])
    # The galaxy stage (and append_galaxy) is left out without galaxy requirements.
    assert "append_galaxy" not in ee["additional_build_steps"]
    steps = "\n".join(ee["additional_build_steps"]["append_final"])
    assert "ansible-galaxy collection install" in steps and tarball in steps, steps
    assert "/usr/share/ansible/collections" in steps
    sources = [f["src"] for f in ee["additional_build_files"]]
    assert "build/ee" in sources


def test_dev_requirements_do_not_leak_into_the_image():
    """ansible-builder introspects the installed collection: without meta/execution-environment.yml
    it reads requirements.txt at the collection root, which here is the developer tooling
    (molecule, ansible-lint, ...). Either ship meta/execution-environment.yml or keep
    requirements.txt out of the built collection."""
    galaxy = _load("galaxy.yml")
    meta_ee = os.path.join(REPO, "meta", "execution-environment.yml")
    assert os.path.exists(meta_ee) or "requirements.txt" in (galaxy.get("build_ignore") or []), (
        "add requirements.txt to galaxy.yml build_ignore (or add meta/execution-environment.yml)")
