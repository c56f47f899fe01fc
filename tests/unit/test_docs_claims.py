"""The operator docs say what the collection does (issue 33, "Docs"): the README's demo time against the
measurements log, the facts playbook's root, galaxy.yml's links, the ansible-core range, the verdict's
decisions in README and docs/index.md, and index.md's bullets. Pure: it reads files."""
import os
import re

import yaml

from ansible_collections.jetson.specdec.plugins.module_utils.verdict.decide import DECISIONS

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _read(*parts):
    with open(os.path.join(REPO, *parts), encoding="utf-8") as handle:
        return handle.read()


def _demo_entry():
    """The newest measurements.md entry about `make demo`'s wall time."""
    entries = re.split(r"^## ", _read("docs", "measurements.md"), flags=re.M)[1:]
    demo = [e for e in entries if "`make demo`" in e.splitlines()[0]]
    assert demo, "docs/measurements.md has no dated entry for `make demo`'s wall time"
    return demo[0]


def test_the_readme_demo_time_is_the_measured_one():
    readme = _read("README.md")
    claim = re.search(r"`make demo` takes about (\d+) minutes .*?the rollout itself (\d+) s", readme)
    assert claim, "README.md no longer states the demo's time as 'about N minutes ... the rollout itself N s'"
    minutes, rollout_s = int(claim.group(1)), int(claim.group(2))
    entry = _demo_entry()
    assert re.search(r"\brollout took %d s\b" % rollout_s, entry, re.I), (rollout_s, entry)
    whole = [int(m) * 60 + int(s) for m, s in re.findall(r"(\d+) min (\d+) s", entry)]
    assert whole, "the demo entry gives no whole-demo time (N min N s)"
    # "about N minutes": every measured run rounds to N, give or take one
    assert all(abs(seconds / 60.0 - minutes) <= 1.0 for seconds in whole), (minutes, whole)


def test_the_facts_playbook_reads_the_facts_root_and_its_tools_like_the_rollout():
    task = yaml.safe_load(_read("playbooks", "facts.yml"))[0]["tasks"][0]["jetson.specdec.jetson_facts"]
    check = yaml.safe_load(_read("roles", "rollout", "tasks", "check.yml"))[0]["block"][0]["jetson.specdec.jetson_facts"]
    assert set(check) >= {"root", "probe_under_root"}
    # the same variables as the rollout's check (which the demo and test-bed inventories set)
    assert "rollout_facts_root" in task["root"] and "jetson_specdec_root" in task["root"], task
    assert "rollout_probe_under_root" in task["probe_under_root"], task
    demo = yaml.safe_load(_read("tests", "demo", "fleet.json"))
    assert demo["hostvars"]["rollout_facts_root"] != "/" and demo["hostvars"]["rollout_probe_under_root"] is True


PLACEHOLDER = re.compile(r"example\.(org|com|net)|localhost|127\.0\.0\.1|\bTODO\b|\bCHANGEME\b|your[-_]?org|^/|^file:",
                         re.I)


def test_galaxy_links_are_not_placeholders():
    galaxy = yaml.safe_load(_read("galaxy.yml"))
    for key in ("repository", "issues", "homepage", "documentation"):
        value = galaxy.get(key)
        if value is None:
            continue  # not set is honest; a placeholder is not
        assert isinstance(value, str) and value.startswith("https://") and not PLACEHOLDER.search(value), (key, value)


def _version(text):
    return tuple(int(p) for p in text.split("."))[:2]


def test_getting_started_asks_for_the_ansible_core_requirements_pins():
    pin = re.search(r"^ansible-core>=([\d.]+),<([\d.]+)", _read("requirements.txt"), re.M)
    asked = re.search(r"pip install 'ansible-core>=([\d.]+),<([\d.]+)'", _read("docs", "getting-started.md"))
    assert pin and asked
    assert (_version(pin.group(1)), _version(pin.group(2))) == (_version(asked.group(1)), _version(asked.group(2)))


def test_index_md_bullets_are_well_formed_links_to_existing_pages():
    lines = _read("docs", "index.md").splitlines()
    bullets = []
    for number, line in enumerate(lines, 1):
        if line.startswith("- "):
            link = re.match(r"- \[[^\]]+\]\(([^)#]+)(#[^)]*)?\)(: \S.*|\.)?$", line)
            assert link, "docs/index.md:%d is not '- [title](page): what': %r" % (number, line)
            assert os.path.isfile(os.path.join(REPO, "docs", link.group(1))), (number, link.group(1))
            bullets.append([line])
        elif line.startswith("  ") and bullets and lines[number - 2].startswith(("- ", "  ")):
            bullets[-1].append(line.strip())
        else:
            assert not line.startswith((" ", "* ", "-[")), "docs/index.md:%d: a broken bullet: %r" % (number, line)
    assert len(bullets) >= 10


def test_readme_and_index_describe_the_sequential_verdict():
    index = " ".join(_read("docs", "index.md").split())
    verdict = re.search(r"- \[The verdict\]\(verdict\.md\): (.*?)(?= - \[|$)", index)
    assert verdict, "docs/index.md has no verdict bullet"
    for decision in DECISIONS:
        assert "`%s`" % decision in verdict.group(1), (decision, verdict.group(1))
    readme = " ".join(_read("README.md").split())
    for stale in ("within noise", "repeat rule", "allows one repeat"):
        assert stale not in readme.lower() and stale not in index.lower(), stale
    assert "round by round" in readme and "inconclusive when the budget ends" in readme


def test_the_readme_says_why_the_demo_prints_no_benchmark_progress():
    """The README's demo console: the demo's benchmark size and the progress interval it names are the real ones."""
    import json
    readme = " ".join(_read("README.md").split())
    prompts = json.loads(_read("tests", "demo", "fleet.json"))["hostvars"]["rollout_bench_num_prompts"]
    interval = yaml.safe_load(_read("roles", "rollout", "defaults", "main.yml"))["rollout_progress_interval"]
    start = yaml.safe_load(_read("roles", "vllm_server", "defaults", "main", "main.yml"))["vllm_server_progress_interval"]
    assert "(%d prompts a level)" % prompts in readme
    assert interval == start and "within the %d s progress interval" % interval in readme
    assert "where it is every %d s" % interval in readme


def test_the_real_lane_page_names_only_lane_tests_that_exist_and_the_eagle3_one():
    """docs/real-lane.md (issue 33 item 9): every test it names in backticks is a test of tests/vllm_lane, and the
    EAGLE-3 run through the role is among them."""
    page = _read("docs", "real-lane.md")
    lane = os.path.join(REPO, "tests", "vllm_lane")
    defined = set()
    for name in os.listdir(lane):
        if name.startswith("test_") and name.endswith(".py"):
            defined.update(re.findall(r"^def (test_\w+)", _read("tests", "vllm_lane", name), flags=re.M))
    named = set(re.findall(r"`(test_\w+)`", page))
    assert "test_role_eagle3_on_real_vllm" in named & defined
    assert named <= defined | set(n[:-3] for n in os.listdir(lane) if n.endswith(".py")), sorted(named - defined)
