"""What one client can take of the reference server, over QUIC and HTTP, and what is left for others.

The attacker connects from 127.0.0.2, another loopback address, so that
the caps per client address apply to it and not to the clients it would
starve, which come from 127.0.0.1.  Every loop here is bounded.
"""

import asyncio
import contextlib
from urllib.parse import urlsplit

import pytest

from mark_publish import MarkClient
from mark_server import MarkServer, serve
from testkit import ELSEWHERE, Attacker, http_from, together

TOKEN = "limits-token"
# The attacker's raw streams, reset by the server, are collected after their loop is gone, and
# asyncio's writers complain then (an exception ignored in __del__): noise, not a finding.
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@contextlib.contextmanager
def attacked(tmp_path):
    """The reference server over QUIC (made now: after any monkeypatch of its limits), and an attacker."""
    with serve(tmp_path / "store", token=TOKEN, log=None, quic=True, rate_limit=0) as running:
        attacker = Attacker(urlsplit(running.mark_url).port)
        try:
            yield running, attacker
        finally:
            attacker.close()


@pytest.fixture
def quic_server(tmp_path):
    with attacked(tmp_path) as pair:
        yield pair


def fetches(server, times: int) -> list:
    with MarkClient(server.mark_url, verify=False, timeout=5) as client:
        return [client.fetch("/health").status for _ in range(times)]


# ---------------------------------------------------------------- QUIC

def test_streams_that_never_end_cannot_freeze_other_clients(quic_server):
    server, attacker = quic_server
    for _ in range(8):  # 8 connections of 10 open streams each: 80 requests that never end
        protocol = attacker.connect()
        for _ in range(10):
            attacker.open(protocol, b"PUBLISH /x.md\n---\n")
    assert fetches(server, 20) == ["ok"] * 20


def test_a_connection_may_open_ten_streams_at_once(quic_server):
    _, attacker = quic_server
    assert attacker.connect()._quic._remote_max_streams_bidi == 10  # as the real server's default


def test_a_client_over_its_share_of_requests_is_refused_unanswered(quic_server, monkeypatch):
    server, attacker = quic_server
    monkeypatch.setattr(server.holders, "most", 2)
    protocol = attacker.connect()
    for _ in range(2):
        attacker.open(protocol, b"FETCH /health\n")  # never ended: held
    assert attacker.request(protocol, b"FETCH /health\n") == b""  # the third: ended at once, unread, unanswered
    assert fetches(server, 3) == ["ok"] * 3  # other addresses are not held to this one's share


def test_a_reset_stream_gives_its_slot_back_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(MarkServer, "MAX_CONNECTIONS", 2)
    with attacked(tmp_path) as (server, attacker):
        protocol = attacker.connect()
        streams = [attacker.open(protocol, b"PUBLISH /x.md\n") for _ in range(2)]
        for stream in streams:
            attacker.reset(protocol, stream)
        assert fetches(server, 2) == ["ok", "ok"]  # long before the 60 s deadline


def test_a_waiting_stream_gets_no_more_credit_than_its_window(tmp_path, monkeypatch):
    monkeypatch.setattr(MarkServer, "MAX_CONNECTIONS", 1)
    with attacked(tmp_path) as (server, attacker):
        protocol = attacker.connect()
        attacker.open(protocol, b"PUBLISH /x.md\n")  # holds the one slot
        queued = attacker.open(protocol, b"PUBLISH /y.md\n" + b"y" * (1 << 20))  # waits for it
        sender = protocol._quic._streams[queued].sender
        for _ in range(500):  # until the server has acknowledged all it let us send (bounded: 5 s)
            if sender.highest_offset and sender._buffer_start == sender.highest_offset:
                break
            attacker.run(asyncio.sleep(0.01))
        window = MarkServer.QUIC_WINDOW  # what it may send: one window, no more
        assert protocol._quic._streams[queued].max_stream_data_remote == window
        assert sender.highest_offset == window


def test_quic_bodies_count_in_the_budget_until_their_stream_ends(quic_server):
    server, attacker = quic_server
    protocol = attacker.connect()
    stream = attacker.open(protocol, b"PUBLISH /x.md\n" + b"x" * 300_000)  # and never ended
    for _ in range(500):  # bounded: 5 s
        if server.buffered.used >= 200_000:
            break
        attacker.run(asyncio.sleep(0.01))
    assert server.buffered.used >= 200_000  # taken as it arrived: past SMALL_BODY, in the budget
    attacker.reset(protocol, stream)
    for _ in range(500):
        if server.buffered.used == 0:
            break
        attacker.run(asyncio.sleep(0.01))
    assert server.buffered.used == 0  # given back once the stream is cut off


def test_a_stream_past_its_deadline_is_reset_and_gives_everything_back(tmp_path, monkeypatch):
    monkeypatch.setattr(MarkServer, "REQUEST_DEADLINE", 1.0)
    monkeypatch.setattr(MarkServer, "MAX_CONNECTIONS", 1)
    with attacked(tmp_path) as (server, attacker):
        protocol = attacker.connect()
        stream = attacker.open(protocol, b"PUBLISH /x.md\n" + b"x" * 200_000)  # and it never ends
        for _ in range(500):  # bounded: 5 s, the deadline is 1 s
            quic_stream = protocol._quic._streams.get(stream)
            if quic_stream is None or quic_stream.sender._reset_error_code is not None:
                break  # told to stop sending (STOP_SENDING): the client reset its side
            attacker.run(asyncio.sleep(0.01))
        else:
            pytest.fail("the stream was never told to stop")
        assert server.buffered.used == 0
        assert fetches(server, 1) == ["ok"]  # the one slot is free again


def test_quic_uploads_that_outgrow_the_budget_together_all_finish(tmp_path, monkeypatch):
    monkeypatch.setattr(MarkServer, "MAX_BUFFERED", 1 << 20)
    with serve(tmp_path / "store", token=TOKEN, log=None, quic=True, rate_limit=0) as server:
        def upload(n):
            with MarkClient(server.mark_url, token=TOKEN, verify=False, timeout=20) as client:
                return client.publish(f"/w{n}.md", "y" * 600_000).status

        # Each takes its bytes as they come: three halfway there could wait on each other for ever.
        assert together(*[lambda n=n: upload(n) for n in range(3)]) == ["created"] * 3
        assert server.buffered.used == 0


def test_a_request_past_the_limit_is_answered_and_not_buffered(quic_server):
    server, _ = quic_server
    with MarkClient(server.mark_url, token=TOKEN, verify=False, timeout=30) as client:
        assert client.publish("/big.md", "x" * (11 << 20)).status == "too-large"
        assert client.fetch("/health").status == "ok"
    assert server.buffered.used == 0


# ---------------------------------------------------------------- HTTP

def test_idle_sockets_of_one_client_leave_room_for_others(tmp_path):
    with serve(tmp_path / "store", token=TOKEN, log=None, rate_limit=0) as server:
        idle = [http_from(server.url, ELSEWHERE) for _ in range(64)]
        try:
            with MarkClient(server.url, timeout=5) as client:
                assert [client.fetch("/health").status for _ in range(10)] == ["ok"] * 10
        finally:
            for conn in idle:
                conn.close()


def test_bodies_that_never_come_hold_no_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(MarkServer, "MAX_BUFFERED", 4 << 20)
    with serve(tmp_path / "store", token=TOKEN, log=None, rate_limit=0) as server:
        stalled = []
        for _ in range(8):  # 8 MiB declared, 10 bytes sent
            conn = http_from(server.url, ELSEWHERE)
            conn.sendall(b"PUBLISH /x.md HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n" + b"x" * 10)
            stalled.append(conn)
        try:
            with MarkClient(server.url, token=TOKEN, timeout=5) as client:
                assert client.publish("/small.md", "small\n", 0).status == "created"
                assert client.publish("/large.md", "z" * 300_000, 0).status == "created"
        finally:
            for conn in stalled:
                conn.close()
