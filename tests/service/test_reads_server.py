"""The reads server's trust in the client address an API process passes on: believed only from
a request with no peer address of its own (one over its Unix socket), dropped from any other."""
from __future__ import annotations

from service.api.lanes import PEER, SCHEME, passed_on


def _scope(client, *headers):
    return {"type": "http", "client": client, "scheme": "http",
            "headers": [(b"host", b"127.0.0.1:8000"), *headers]}


def test_an_address_passed_on_over_the_socket_is_the_client():
    got = passed_on(_scope(None, (PEER, b"10.1.2.3:4567"), (SCHEME, b"https")))
    assert got["client"] == ("10.1.2.3", 4567) and got["scheme"] == "https"
    assert got["headers"] == [(b"host", b"127.0.0.1:8000")]
    v6 = passed_on(_scope(None, (PEER, b"::1:80")))
    assert v6["client"] == ("::1", 80) and v6["scheme"] == "http"


def test_an_address_claimed_by_a_request_with_a_peer_is_never_believed():
    got = passed_on(_scope(("203.0.113.9", 5555), (PEER, b"127.0.0.1:1"),
                           (SCHEME.upper(), b"https")))
    assert got["client"] == ("203.0.113.9", 5555) and got["scheme"] == "http"
    assert got["headers"] == [(b"host", b"127.0.0.1:8000")]
    odd = passed_on(_scope(None, (SCHEME, b"javascript")))  # no address given: nothing taken
    assert odd["client"] is None and odd["headers"] == [(b"host", b"127.0.0.1:8000")]
    assert passed_on(_scope(None, (PEER, b"x:1"), (SCHEME, b"gopher")))["scheme"] == "http"
