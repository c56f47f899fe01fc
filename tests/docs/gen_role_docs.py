"""Generate the variable tables of docs/role-<role>.md from roles/<role>/meta/argument_specs.yml.

    python tests/docs/gen_role_docs.py            rewrite the generated block of every role doc
    python tests/docs/gen_role_docs.py --check    exit 1 (and say which) when a doc has drifted

Only the part between the BEGIN/END markers is generated; the prose around it is
written by hand. A role without meta/argument_specs.yml is reported and skipped (its
table appears as soon as the file exists and this script runs again). A missing doc
is created with a title and the generated block.
tests/unit/test_role_docs_in_sync.py runs the check in `make unit`.
"""
import json
import os
import re
import sys

import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BEGIN = "<!-- BEGIN GENERATED VARIABLES (tests/docs/gen_role_docs.py from meta/argument_specs.yml; do not edit by hand) -->"
END = "<!-- END GENERATED VARIABLES -->"

# Ansible documentation markup -> Markdown.
_MARKUP = [
    (re.compile(r"L\(([^,()]+),\s*([^)]+)\)"), r"[\1](\2)"),
    (re.compile(r"U\(([^)]+)\)"), r"<\1>"),
    (re.compile(r"I\(([^)]+)\)"), r"*\1*"),
    (re.compile(r"B\(([^)]+)\)"), r"**\1**"),
    (re.compile(r"[CMOVPE]\(([^()]*(?:\([^()]*\)[^()]*)*)\)"), r"`\1`"),
]


def markdown(text):
    if isinstance(text, list):
        text = " ".join(str(t) for t in text)
    text = " ".join(str(text).split())
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text.replace("|", "\\|")


def render_default(option):
    if "default" not in option:
        return "*required*" if option.get("required") else "—"
    value = option["default"]
    if isinstance(value, str):
        shown = value if value != "" else '""'
    else:
        shown = json.dumps(value, sort_keys=True)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return "`%s`" % shown.replace("|", "\\|")


def render_type(option):
    kind = option.get("type", "str")
    if kind == "list" and option.get("elements"):
        kind = "list of %s" % option["elements"]
    return kind


def render_entry(role, name, spec, same_as=None):
    lines = []
    title = "`main`" if name == "main" else "`%s` (`tasks_from: %s.yml`)" % (name, name)
    lines.append("### Entry point %s" % title)
    lines.append("")
    if spec.get("short_description"):
        lines.append(markdown(spec["short_description"]) + ".")
        lines.append("")
    for paragraph in spec.get("description") or []:
        lines.append("- " + markdown(paragraph))
    if spec.get("description"):
        lines.append("")
    options = spec.get("options") or {}
    if same_as:
        lines.append("Same %d variables as the entry point `%s`." % (len(options), same_as))
        return lines
    if not options:
        lines.append("No variables of its own (the argument spec checks none).")
        return lines
    lines.append("| variable | type | default | description |")
    lines.append("|---|---|---|---|")
    for var in sorted(options):
        option = options[var] or {}
        text = markdown(option.get("description", ""))
        if option.get("choices"):
            text += " Choices: %s." % ", ".join("`%s`" % ('""' if c == "" else c) for c in option["choices"])
        if option.get("required"):
            text += " **Required.**"
        lines.append("| `%s` | %s | %s | %s |" % (var, render_type(option), render_default(option), text))
    lines.append("")
    lines.append("%d variables." % len(options))
    return lines


def load_specs(role):
    path = os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        data = yaml.safe_load(handle) or {}
    return data.get("argument_specs") or {}


def render_block(role):
    specs = load_specs(role)
    if specs is None:
        return None
    lines = [BEGIN, "", "## Variables", ""]
    lines.append("Generated from `roles/%s/meta/argument_specs.yml`; Ansible validates every run against the same file."
                 % role)
    lines.append("")
    rendered = []
    for name in sorted(specs, key=lambda n: (n != "main", n)):
        options = specs[name].get("options") or {}
        same_as = next((done for done, opts in rendered if opts == options and options), None)
        lines.extend(render_entry(role, name, specs[name], same_as))
        lines.append("")
        rendered.append((name, options))
    lines.append(END)
    return "\n".join(lines)


def roles():
    base = os.path.join(REPO, "roles")
    return sorted(r for r in os.listdir(base) if os.path.isdir(os.path.join(base, r)) and not r.startswith("."))


def doc_path(role):
    return os.path.join(REPO, "docs", "role-%s.md" % role)


def expected_doc(role, current):
    """The doc as it should be: `current` with its generated block replaced (or appended)."""
    block = render_block(role)
    if block is None:
        return None
    if current is None:
        return "# Role `jetson.specdec.%s`\n\n%s\n" % (role, block)
    if BEGIN in current and END in current:
        head, rest = current.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        return head + block + tail
    return current.rstrip("\n") + "\n\n" + block + "\n"


def check():
    problems = []
    for role in roles():
        path = doc_path(role)
        current = open(path).read() if os.path.exists(path) else None
        wanted = expected_doc(role, current)
        if wanted is None:
            problems.append("roles/%s has no meta/argument_specs.yml (every role needs one)" % role)
        elif current is None:
            problems.append("docs/role-%s.md is missing" % role)
        elif current != wanted:
            problems.append("docs/role-%s.md does not match roles/%s/meta/argument_specs.yml" % (role, role))
    return problems


def main(argv):
    if "--check" in argv:
        problems = check()
        for problem in problems:
            print("drift: " + problem, file=sys.stderr)
        if problems:
            print("Run: python tests/docs/gen_role_docs.py", file=sys.stderr)
        return 1 if problems else 0
    for role in roles():
        path = doc_path(role)
        current = open(path).read() if os.path.exists(path) else None
        wanted = expected_doc(role, current)
        if wanted is None:
            print("skip %s: roles/%s/meta/argument_specs.yml does not exist yet" % (role, role))
            continue
        if wanted != current:
            with open(path, "w") as handle:
                handle.write(wanted)
            print("wrote docs/role-%s.md" % role)
        else:
            print("docs/role-%s.md is up to date" % role)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
