"""The board's nvpmodel and jetson_clocks stand-ins: the real tools' outputs, error texts and file effects."""
import io
import json
import os

import pytest

from vllm_sim import board_sysfs, board_tools

NODE = "sys/class/devfreq/17000000.gpu"
CONF = """< POWER_MODEL ID=0 NAME=MAXN >
GPU MAX_FREQ -1
< POWER_MODEL ID=2 NAME=30W >
GPU MAX_FREQ 612000000
< PM_CONFIG DEFAULT=2 >
"""


@pytest.fixture
def root(tmp_path, monkeypatch):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/nvpmodel.conf").write_text(CONF)
    profile = tmp_path / "profile.json"
    profile.write_text(json.dumps({"gpu_devfreq": {"node": NODE, "max_hz": 1300500000}}))
    monkeypatch.setenv("JETSON_SIM_SYSROOT", str(tmp_path))
    monkeypatch.setenv("JETSON_SIM_PROFILE", str(profile))
    monkeypatch.setenv("HOME", str(tmp_path))
    board_sysfs.BoardSysfs(str(tmp_path), {"node": NODE, "max_hz": 1300500000}).held(pinned=False)
    return tmp_path


def run(main, *argv, **kw):
    out = io.StringIO()
    rc = main(list(argv), out=out, **kw)
    return rc, out.getvalue()


def freq(root, name):
    return int((root / NODE / name).read_text())


def test_nvpmodel_query_list_and_switch(root):
    assert run(board_tools.nvpmodel_main, "-q") == (0, "NV Power Mode: 30W\n2\n")  # the conf's default
    rc, out = run(board_tools.nvpmodel_main, "-p", "--verbose")
    assert "NVPM VERB: POWER_MODEL: ID=0 NAME=MAXN\n" in out and "PM_CONFIG: DEFAULT=30W(2)" in out
    assert run(board_tools.nvpmodel_main, "-m", "2") == (0, "")
    assert (root / "var/lib/nvpmodel/status").read_text() == "pmode:0002\n"
    assert (freq(root, "max_freq"), freq(root, "min_freq")) == (612000000, 306000000)  # the mode's GPU cap
    run(board_tools.nvpmodel_main, "-m", "0")
    assert run(board_tools.nvpmodel_main, "-q")[1] == "NV Power Mode: MAXN\n0\n"
    assert freq(root, "max_freq") == 1300500000


def test_nvpmodel_errors(root):
    assert run(board_tools.nvpmodel_main, "-m", "5") == (1, "NVPM ERROR: request for bad power mode 5\n")
    (root / "etc/nvpmodel.conf").unlink()
    assert run(board_tools.nvpmodel_main, "-q")[0] == 1


def test_jetson_clocks_pin_store_restore(root):
    run(board_tools.jetson_clocks_main, "--store")
    assert (root / "l4t_dfs.conf").read_text() == "/%s/min_freq:306000000\n" % NODE  # the real "path:value" lines
    assert run(board_tools.jetson_clocks_main) == (0, "")
    assert freq(root, "min_freq") == freq(root, "max_freq") == 1300500000
    assert run(board_tools.jetson_clocks_main, "--show")[1] == \
        "GPU MinFreq=1300500000 MaxFreq=1300500000 CurrentFreq=1300500000\n"
    assert run(board_tools.jetson_clocks_main, "--restore", str(root / "l4t_dfs.conf"))[0] == 0
    assert freq(root, "min_freq") == 306000000


def test_jetson_clocks_errors(root):
    missing = str(root / "none.conf")
    assert run(board_tools.jetson_clocks_main, "--restore", missing) == (1, "Error: %s file not found !\n" % missing)
    run(board_tools.jetson_clocks_main, "--store")
    rc, out = run(board_tools.jetson_clocks_main, "--store", answer="")
    assert rc == 1 and out.endswith("Error: file %s already exists!\n" % os.path.join(str(root), "l4t_dfs.conf"))
    assert run(board_tools.jetson_clocks_main, "--bogus") == (1, "Unknown option: --bogus\n")
