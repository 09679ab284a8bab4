"""Deliveries against a receiver that trickles its answer a byte at a time: each attempt ends at
its total deadline (not a deadline per read, which the trickle keeps resetting), and the alert's
other delivery (its GitHub issue) goes out all the same."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from service.jobs.tasks import KINDS
from tests.conftest import drain_jobs
from tests.service.test_alerts import Receiver, _app, history

pytestmark = pytest.mark.serial  # it measures time: alone, never beside another test


class Trickler:
    """A loopback HTTP receiver that reads the request, then sends its status line one byte
    every `every_s` seconds, never finishing."""

    def __init__(self, every_s: float = 0.5):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.every_s, self.stop, self.accepted = every_s, threading.Event(), 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                con, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._trickle, args=(con,), daemon=True).start()

    def _trickle(self, con: socket.socket) -> None:
        con.settimeout(5)
        try:
            con.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
                if self.stop.is_set():
                    break
                con.sendall(bytes([byte]))
                time.sleep(self.every_s)
        except OSError:
            pass
        finally:
            con.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def trickler():
    t = Trickler()
    yield t
    t.close()


def test_an_attempt_ends_at_its_total_deadline(trickler):
    from service import outbound

    t0 = time.monotonic()
    with pytest.raises(outbound.DeadlineExceeded):
        outbound.request("POST", f"{trickler.url}/hook", 2.0, json={"a": 1})
    assert 1.9 < time.monotonic() - t0 < 4.0  # the trickle never reset it


def test_deliveries_have_a_lane_of_their_own():
    assert {k for k, v in KINDS.items() if v.lane == "delivery"} == {"webhook", "github_issue",
                                                                       "pr_comment"}


def test_a_trickling_webhook_holds_up_neither_the_issue_nor_the_queue(settings, trickler):
    rec = Receiver()
    try:
        app, TC = _app(settings, rec, alert_webhook=f"{trickler.url}/hook", alert_retries=2,
                       delivery_timeout_s=1.5)
        with TC(app) as c:
            runs = history(series=2, runs=40, step_series=0, step_at=25)
            assert c.post("/api/v1/runs/batch", json={"runs": runs}).status_code == 201
            t0 = time.monotonic()
            drain_jobs(app)
            took = time.monotonic() - t0
            alert = c.get("/api/v1/alerts").json()["alerts"][0]
            assert alert["github_issue"] == 1 and len(rec.issues) == 1  # delivered all the same
            assert alert["webhook_delivered_at"] is None
            assert alert["notify_error"] == "webhook unreachable (DeadlineExceeded)"
            assert trickler.accepted == 2  # both attempts, each cut at 1.5 s
            assert took < 60, took
        app.state.engine.dispose()
    finally:
        rec.close()
