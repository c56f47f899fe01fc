"""Startup failures, printed the way vLLM prints them, with vLLM's exit codes."""


class SimExit(Exception):
    """Stop the process: `lines` go to stderr, then exit with `code`."""

    def __init__(self, code, lines):
        Exception.__init__(self, lines[-1] if lines else "")
        self.code = code
        self.lines = lines


def traceback_lines(exc_line, where="vllm/entrypoints/cli/serve.py"):
    """A short traceback; the last line is the one log scrapers look for."""
    return [
        "Traceback (most recent call last):",
        '  File "%s", line 1, in <simulated vllm>' % where,
        exc_line,
    ]


def pydantic_error(cls_name, errors):
    """pydantic v2's ValidationError text. errors: list of (loc, msg, type, input_repr, input_type)."""
    head = "%d validation error%s for %s" % (len(errors), "" if len(errors) == 1 else "s", cls_name)
    lines = ["pydantic_core._pydantic_core.ValidationError: " + head]
    for loc, msg, etype, input_repr, input_type in errors:
        if loc:
            lines.append(loc)
        lines.append("  %s [type=%s, input_value=%s, input_type=%s]" % (msg, etype, input_repr, input_type))
        lines.append("    For further information visit https://errors.pydantic.dev/2.11/v/%s" % etype)
    return lines
