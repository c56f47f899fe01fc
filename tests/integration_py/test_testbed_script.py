"""The test-bed script explains a bad environment in one sentence, not a stack trace."""
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest

SCRIPT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "testbed", "testbed.sh"))


def run(args, env=None, prefix=(), script=SCRIPT):
    full_env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    full_env.update(env or {})
    return subprocess.run(list(prefix) + ["bash", script] + args, env=full_env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_mirror_from_deb822_sources(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example.invalid/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://mirror.example.invalid/debian-security\nSuites: bookworm-security\n")
    result = run(["mirror"], {"JETSON_SPECDEC_APT_ETC": str(tmp_path)})
    assert result.returncode == 0 and result.stdout.strip() == "http://mirror.example.invalid/debian"


def test_mirror_from_one_line_sources_list(tmp_path):
    (tmp_path / "sources.list").write_text("# comment\ndeb [arch=amd64] http://mirror.example.invalid/ubuntu noble main\n")
    result = run(["mirror"], {"JETSON_SPECDEC_APT_ETC": str(tmp_path)})
    assert result.stdout.strip() == "http://mirror.example.invalid/ubuntu"


def test_override_wins(tmp_path):
    result = run(["mirror"], {"JETSON_SPECDEC_APT_ETC": str(tmp_path), "JETSON_SPECDEC_APT_MIRROR": "http://m.invalid/d"})
    assert result.stdout.strip() == "http://m.invalid/d"


def test_no_mirror_is_one_clear_message(tmp_path):
    result = run(["mirror"], {"JETSON_SPECDEC_APT_ETC": str(tmp_path)})
    assert result.returncode == 2
    assert "no apt mirror found" in result.stderr and "JETSON_SPECDEC_APT_MIRROR" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to drop to nobody")
def test_no_docker_and_no_root_is_one_clear_message():
    # The unprivileged user must be able to read the script and traverse its folders (pytest's
    # tmp_path is 0700, and so may be the checkout's parent): run a copy from a 0755 folder.
    top = tempfile.mkdtemp(prefix="specdec-nodocker-")
    os.chmod(top, 0o755)
    script = pathlib.Path(top) / "tests" / "testbed" / "testbed.sh"
    script.parent.mkdir(parents=True)
    shutil.copy(SCRIPT, str(script))
    for folder in (script.parent, script.parent.parent):
        os.chmod(str(folder), 0o755)
    os.chmod(str(script), 0o755)
    bare = pathlib.Path(top) / "bin"
    bare.mkdir()
    for tool in ("bash", "id", "cat", "sed", "awk", "sha256sum", "cut", "grep", "head", "seq", "sleep", "mkdir",
                 "dirname", "printf", "env"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, str(bare / tool))
    result = run(["engine"], {"PATH": str(bare)}, script=str(script),
                 prefix=(shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"))
    shutil.rmtree(top)
    assert result.returncode == 2
    assert "no Docker engine and not root" in result.stderr
    assert result.stderr.count("\n") == 1


def test_unknown_command_prints_usage():
    result = run(["bogus"])
    assert result.returncode == 2 and "usage:" in result.stderr
