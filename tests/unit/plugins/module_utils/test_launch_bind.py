"""Issue 34 item 5: the open-bind check compares addresses, not spellings."""
import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import inputs

# Every one of these binds every interface (vLLM: an IPv6 literal as IPv6, the rest through getaddrinfo).
EVERY_INTERFACE = ["0.0.0.0", "0", "00", "0000", "0x0", "0x00000000", "0.0", "0.0.0", "0.0.0.00", "000.000.000.000",
                   "0.0x0.0", "000000000000", "::", "0::", "::0", "::0.0.0.0", "0:0:0:0:0:0:0:0", "0000::0000",
                   "::ffff:0.0.0.0", "::ffff:0:0"]
LOOPBACK = ["127.0.0.1", "127.1", "0x7f.1", "017700000001", "127.0.0.2", "::1", "0:0:0:0:0:0:0:1", "localhost",
            "LOCALHOST", "localhost.", "ip6-localhost", "::ffff:127.0.0.1"]
ONE_ADDRESS = ["192.168.1.10", "10.0.0.5", "fe80::1", "2001:db8::7", "1", "0.0.0.1", "::2"]
NAMES = ["thor-01", "thor-01.lan", "board.example.org", "0.0.0.0.", "zero", "0x", "localhost-x"]


@pytest.mark.parametrize("host", EVERY_INTERFACE)
def test_every_spelling_of_every_interface_needs_a_key_or_the_opt_in(host):
    assert inputs.bind_scope(host) == "all"
    out = inputs.check_host(host, "", False)
    assert len(out) == 1 and out[0].startswith("input.open_bind: vllm_server_host %s listens on every interface" % host), out
    assert inputs.check_host(host, "k-1", False) == []
    assert inputs.check_host(host, "", True) == []


@pytest.mark.parametrize("host", LOOPBACK)
def test_loopback_in_any_spelling_is_not_open(host):
    assert inputs.bind_scope(host) == "loopback"
    assert inputs.check_host(host, "", False) == []


@pytest.mark.parametrize("host", ONE_ADDRESS)
def test_one_address_is_not_every_interface(host):
    assert inputs.bind_scope(host) == "one"
    assert inputs.check_host(host, "", False) == []


@pytest.mark.parametrize("host", NAMES)
def test_a_host_name_counts_as_open_because_the_board_resolves_it(host):
    assert inputs.bind_scope(host) == "name"
    out = inputs.check_host(host, "", False)
    assert len(out) == 1 and out[0].startswith("input.open_bind:") and "host name" in out[0], out
    assert inputs.check_host(host, "k-1", False) == []


@pytest.mark.parametrize("host", ["[::]", "[0.0.0.0]", "-0", "0 0", "0\n", "", None, 0])
def test_spellings_that_are_no_host_are_refused_as_input_host(host):
    out = inputs.check_host(host, "", False)
    assert len(out) == 1 and out[0].startswith("input.host:"), out
