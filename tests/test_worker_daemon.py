"""The workers' daemon of the sessions sparktide starts: each task's TCP connection acknowledges
at once (``TCP_QUICKACK``), a Unix socket is served as it is, and the daemon serves every task
through that (``tests/test_local_workers.py``: a session's workers start from this daemon)."""

from __future__ import annotations

import socket
import sys
import types

import pytest

from sparktide.spark import worker_daemon

quick_ack = getattr(socket, "TCP_QUICKACK", None)
needs_quick_ack = pytest.mark.skipif(quick_ack is None, reason="a system without TCP_QUICKACK")


def _tcp_pair() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
    return client, accepted


@needs_quick_ack
def test_a_tcp_connection_is_served_in_quick_ack_mode() -> None:
    seen = []

    def serve(sock: socket.socket, authenticated: bool) -> int:
        seen.append((sock.getsockopt(socket.IPPROTO_TCP, quick_ack), authenticated))
        return 7

    client, accepted = _tcp_pair()
    with client, accepted:
        accepted.setsockopt(socket.IPPROTO_TCP, quick_ack, 0)
        assert accepted.getsockopt(socket.IPPROTO_TCP, quick_ack) == 0
        code = worker_daemon.acknowledging_at_once(serve)(accepted, True)
    assert code == 7  # the task's exit code, as the daemon's loop reads it
    assert seen == [(1, True)]


def test_a_unix_socket_is_served_as_it_is() -> None:
    served = []
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        code = worker_daemon.acknowledging_at_once(lambda s, a: served.append((s, a)) or 0)(
            right, False
        )
        assert served == [(right, False)] and code == 0


def test_the_daemon_serves_its_tasks_through_the_wrapper(monkeypatch) -> None:
    """``main`` runs PySpark's daemon with its per-task function wrapped."""
    calls = []
    fake = types.ModuleType("pyspark.daemon")
    fake.worker = lambda sock, authenticated: calls.append("worker") or 0
    fake.manager = lambda: calls.append(fake.worker)
    monkeypatch.setitem(sys.modules, "pyspark.daemon", fake)
    monkeypatch.setattr(sys, "path", list(sys.path))  # main() rewrites the path in place
    import pyspark

    monkeypatch.setattr(pyspark, "daemon", fake, raising=False)
    worker_daemon.main()
    [serve] = calls
    assert serve.__name__ == "serve_acknowledging" or quick_ack is None
