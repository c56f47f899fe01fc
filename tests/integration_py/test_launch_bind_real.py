"""Issue 34 item 5 against the kernel: bind each --host spelling as vLLM does (port 0, never listening)."""
import ipaddress
import socket

import pytest

from ansible_collections.jetson.specdec.plugins.module_utils.launch import inputs

EVERY_INTERFACE = ["0.0.0.0", "0", "00", "0000", "0x0", "0x00000000", "0.0", "0.0.0", "0.0.0.00", "000.000.000.000",
                   "0.0x0.0", "000000000000", "::", "0::", "::0", "::0.0.0.0", "0:0:0:0:0:0:0:0", "0000::0000",
                   "::ffff:0.0.0.0", "::ffff:0:0"]
NOT_EVERY = ["127.0.0.1", "127.1", "0x7f.1", "017700000001", "127.0.0.2", "::1", "0:0:0:0:0:0:0:1", "localhost",
             "::ffff:127.0.0.1"]


def _bind_like_vllm(host):
    """What this machine binds for --host HOST the way vLLM 0.32's create_server_socket does, or None."""
    try:
        ipaddress.IPv6Address(host)
        family = socket.AF_INET6
    except ValueError:
        family = socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
        return ipaddress.ip_address(sock.getsockname()[0])
    except OSError:
        return None
    finally:
        sock.close()


@pytest.mark.parametrize("host", EVERY_INTERFACE + NOT_EVERY)
def test_the_classification_is_what_a_real_bind_gets(host):
    """A real bind on loopback-only sockets (port 0): the kernel's address is unspecified exactly when 'all'."""
    bound = _bind_like_vllm(host)
    if bound is None:
        pytest.skip("this machine cannot bind %s (no IPv6?)" % host)
    if bound.version == 6 and bound.ipv4_mapped is not None:
        bound = bound.ipv4_mapped
    assert bound.is_unspecified is (inputs.bind_scope(host) == "all"), (host, bound)
