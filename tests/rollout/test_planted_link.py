"""Issue 34, high 1, end to end: the service account cannot make the role chown /etc.

A simulated board gets the baseline from playbooks/deploy.yml (the role creates the account vllm,
/var/lib/vllm - its home - and the cache /var/lib/vllm/huggingface in it). Then, as vllm, the test
does what the account can do in its own directory: it replaces the cache with a symbolic link to
/etc. The role runs again as root: before the fix its `file` task followed the link and made /etc
vllm's with mode 0750 (the account could then replace /etc/passwd). Now the run fails on that
host with the rule host.path_link, and /etc, the unit, the env file and the server keep what they had.
"""
import pytest

from harness import UNIT, board

PREFIX = "specdec-link-"
HOST = "ln-thor"
BOARDS = [board(HOST, "thor-01")]
CACHE = "/var/lib/vllm/huggingface"


@pytest.fixture(scope="module")
def fleet(make_fleet):
    fleet = make_fleet(PREFIX, BOARDS)
    rc, out, dummy = fleet.run("playbooks/deploy.yml", vllm_server_speculation=False)
    assert rc == 0, out[-3000:]
    return fleet


def snapshot(fleet):
    """What must not change: /etc's owner and mode (and its passwd), the unit, the env file, the server PID."""
    script = ("stat -c '%u:%g:%a' /etc /etc/passwd; md5sum " + UNIT + " /etc/vllm/vllm.env; "
              "systemctl show -p MainPID --value vllm")
    return fleet.sh(HOST, script, check=True).stdout


@pytest.mark.parametrize("plant,link,extra", [
    # the cache itself becomes a link to /etc
    ("mv %s /var/lib/vllm/hf.old && ln -s /etc %s" % (CACHE, CACHE), CACHE, {}),
    # a link in the middle of the cache path (hf_home /var/lib/vllm/d/var/etc reaches /etc through it)
    ("mkdir /var/lib/vllm/d && ln -s / /var/lib/vllm/d/var", "/var/lib/vllm/d/var",
     {"vllm_server_hf_home": "/var/lib/vllm/d/var/etc"}),
], ids=["cache_is_a_link_to_etc", "link_in_a_middle_component"])
def test_a_link_the_service_account_plants_is_refused_and_etc_keeps_its_owner(fleet, plant, link, extra):
    # as the account: su to vllm (its shell is nologin), in its own home
    fleet.sh(HOST, "su -s /bin/sh vllm -c '%s'" % plant, check=True)
    assert fleet.sh(HOST, "stat -c %U:%F " + link).stdout.strip() == "vllm:symbolic link"
    before = snapshot(fleet)
    assert before.startswith("0:0:755\n0:0:644\n"), before
    try:
        rc, out, dummy = fleet.run("playbooks/deploy.yml", vllm_server_speculation=False, **extra)
        assert rc != 0
        assert "host.path_link" in out, out[-3000:]
        assert snapshot(fleet) == before
    finally:
        fleet.sh(HOST, "rm -rf /var/lib/vllm/d; if [ -L %s ]; then rm %s && mv /var/lib/vllm/hf.old %s; fi"
                 % (CACHE, CACHE, CACHE))


# Issue 34, medium 6 and 7 on the same board: an existing directory the collection did not create (the
# host's wall behind the data-root rule), a system path (the input rule), a unit the collection did not
# write and a system service's name. Each run is refused with its rule; the directory, the unit and
# the server keep what they had.
@pytest.mark.parametrize("setup,extra,rule,watch", [
    ("mkdir -p /srv/app && chmod 1777 /srv/app && touch /srv/app/data",
     {"vllm_server_hf_home": "/srv/app"}, "host.path_foreign", "/srv/app"),
    ("true", {"vllm_server_hf_home": "/var/lib/dpkg/info"}, "input.path_root", "/var/lib/dpkg/info"),
    ("printf '[Unit]\\nDescription=by hand\\n[Service]\\nExecStart=/bin/sleep 1\\n' "
     "> /etc/systemd/system/llm-by-hand.service",
     {"vllm_server_service_name": "llm-by-hand"}, "host.unit_not_ours", "/etc/systemd/system/llm-by-hand.service"),
    ("true", {"vllm_server_service_name": "ssh"}, "input.service_name_reserved", "/etc/systemd/system"),
], ids=["foreign_directory", "system_subdirectory", "unit_written_by_hand", "system_service_name"])
def test_a_foreign_directory_or_unit_is_refused_and_kept(fleet, setup, extra, rule, watch):
    fleet.sh(HOST, setup, check=True)
    look = "stat -c '%u:%g:%a' " + watch + "; ls -la " + watch + " | md5sum; ls /etc/vllm"
    before, watched = snapshot(fleet), fleet.sh(HOST, look, check=True).stdout
    rc, out, dummy = fleet.run("playbooks/deploy.yml", vllm_server_speculation=False, **extra)
    assert rc != 0
    assert rule + ":" in out, out[-3000:]
    assert snapshot(fleet) == before
    assert fleet.sh(HOST, look, check=True).stdout == watched
