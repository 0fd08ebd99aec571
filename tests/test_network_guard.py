import socket

import pytest

from tests.conftest import RealNetworkCall


def test_non_loopback_connection_fails():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(RealNetworkCall):
            s.connect(("8.8.8.8", 53))
    finally:
        s.close()


def test_loopback_is_allowed():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.socket()
    try:
        client.connect(server.getsockname())
    finally:
        client.close()
        server.close()
