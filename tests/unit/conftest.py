"""Make the repository importable as ``ansible_collections.jetson.specdec``.

The collection lives at the repository root, so unit tests build a tiny
``ansible_collections/jetson/specdec`` symlink tree in a temporary folder and
put it first on ``sys.path``.  Modules and tests then import module_utils by
their real FQCN path, exactly as Ansible does on a managed node.
"""
import os
import sys
import tempfile

_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _install_collection_path():
    if os.path.basename(os.path.dirname(os.path.dirname(_REPO))) == "ansible_collections":
        # Already running from an ansible_collections/jetson/specdec checkout (ansible-test).
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(_REPO))))
        return
    base = tempfile.mkdtemp(prefix="specdec-unit-")
    ns = os.path.join(base, "ansible_collections", "jetson")
    os.makedirs(ns)
    os.symlink(_REPO, os.path.join(ns, "specdec"))
    sys.path.insert(0, base)


_install_collection_path()
