"""Helpers to run a module's main() in-process (ansible-core >= 2.19 style)."""
import contextlib
import json

from ansible.module_utils import basic
from ansible.module_utils.common.text.converters import to_bytes


class AnsibleExitJson(Exception):
    """Raised by the patched exit_json: args[0] is the result."""


class AnsibleFailJson(Exception):
    """Raised by the patched fail_json: args[0] is the result."""


@contextlib.contextmanager
def set_module_args(args):
    args = dict(args)
    args.setdefault("_ansible_remote_tmp", "/tmp")
    args.setdefault("_ansible_keep_remote_files", False)
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:
        serialized = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        with contextlib.ExitStack() as stack:
            from unittest import mock
            stack.enter_context(mock.patch.object(basic, "_ANSIBLE_ARGS", serialized))
            yield
        return
    with patch_module_args(args):
        yield


def exit_json(*args, **kwargs):
    kwargs.setdefault("changed", False)
    raise AnsibleExitJson(kwargs)


def fail_json(*args, **kwargs):
    kwargs["failed"] = True
    raise AnsibleFailJson(kwargs)


def run_module(module_main, args):
    """Run ``module_main`` with ``args``; return (failed, result)."""
    from unittest import mock
    with mock.patch.multiple(basic.AnsibleModule, exit_json=exit_json, fail_json=fail_json):
        with set_module_args(args):
            try:
                module_main()
            except AnsibleExitJson as exc:
                return False, exc.args[0]
            except AnsibleFailJson as exc:
                return True, exc.args[0]
    raise AssertionError("module returned without exit_json/fail_json")
