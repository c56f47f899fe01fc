"""docs/role-<role>.md variable tables match roles/<role>/meta/argument_specs.yml.

Fix a failure with:  python tests/docs/gen_role_docs.py
"""
import importlib.util
import os

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ROLES = sorted(r for r in os.listdir(os.path.join(REPO, "roles")) if os.path.isdir(os.path.join(REPO, "roles", r)))


def _generator():
    spec = importlib.util.spec_from_file_location("gen_role_docs", os.path.join(REPO, "tests", "docs", "gen_role_docs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def _defaults(role):
    """Top-level keys of defaults/main.yml or every file of defaults/main/."""
    base = os.path.join(REPO, "roles", role, "defaults")
    paths = []
    if os.path.isfile(os.path.join(base, "main.yml")):
        paths.append(os.path.join(base, "main.yml"))
    if os.path.isdir(os.path.join(base, "main")):
        paths += sorted(os.path.join(base, "main", f) for f in os.listdir(os.path.join(base, "main")) if f.endswith((".yml", ".yaml")))
    merged = {}
    for path in paths:
        with open(path) as handle:
            merged.update(yaml.safe_load(handle) or {})
    return merged


@pytest.mark.parametrize("role", ROLES)
def test_role_has_argument_specs(role):
    assert GEN.load_specs(role) is not None, "roles/%s/meta/argument_specs.yml is missing" % role


@pytest.mark.parametrize("role", ROLES)
def test_role_doc_matches_argument_specs(role):
    if GEN.load_specs(role) is None:
        pytest.skip("roles/%s has no argument_specs yet (test_role_has_argument_specs fails for it)" % role)
    path = GEN.doc_path(role)
    assert os.path.exists(path), "docs/role-%s.md is missing: run python tests/docs/gen_role_docs.py" % role
    with open(path) as handle:
        current = handle.read()
    assert GEN.BEGIN in current and GEN.END in current, "docs/role-%s.md has no generated block" % role
    assert current == GEN.expected_doc(role, current), (
        "docs/role-%s.md drifted from roles/%s/meta/argument_specs.yml: run python tests/docs/gen_role_docs.py" % (role, role))


@pytest.mark.parametrize("role", ROLES)
def test_every_default_is_in_argument_specs(role):
    specs = GEN.load_specs(role)
    if specs is None:
        pytest.skip("no argument_specs")
    options = (specs.get("main") or {}).get("options") or {}
    undocumented = sorted(set(_defaults(role)) - set(options))
    assert not undocumented, "roles/%s/defaults set variables argument_specs does not describe: %s" % (role, undocumented)


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_defaults_match_role_defaults(role):
    specs = GEN.load_specs(role)
    if specs is None:
        pytest.skip("no argument_specs")
    defaults = _defaults(role)
    options = (specs.get("main") or {}).get("options") or {}
    differ = {name: (option["default"], defaults[name]) for name, option in options.items()
              if "default" in option and name in defaults and option["default"] != defaults[name]}
    assert not differ, "roles/%s: argument_specs default != defaults/ value: %s" % (role, differ)


def test_drift_is_detected(tmp_path, monkeypatch):
    """Changing a description in a role's argument_specs makes the check fail."""
    role = "pull_mode"
    doc = GEN.doc_path(role)
    with open(doc) as handle:
        current = handle.read()
    specs = GEN.load_specs(role)
    specs["main"]["options"]["pull_mode_branch"]["description"] = "Something else."
    monkeypatch.setattr(GEN, "load_specs", lambda r: specs if r == role else None)
    assert GEN.expected_doc(role, current) != current


def test_generator_renders_markup():
    assert GEN.markdown("C(a) and O(b=c) or V(x), I(y) L(t,https://e.invalid) a|b") == \
        "`a` and `b=c` or `x`, *y* [t](https://e.invalid) a\\|b"
