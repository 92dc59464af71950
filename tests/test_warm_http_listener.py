"""The HTTP listener as another local user, or a web page through DNS rebinding, meets
it: a request must name the loopback host and carry no web origin, and no caller can
hold connections or threads beyond the listener's limits."""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from kodelet.warm import http as warm_http

from tests.kit.processes import wait_for

BODY = b'{"hook_event_name": "PreToolUse"}'


class Listener:
    def __init__(self, limits: warm_http.Limits) -> None:
        self.calls: list[bytes] = []
        self.record = warm_http.Record("/nowhere", warm_http.free_port(), "s3cret")
        self.httpd, self.thread = warm_http.bind(self.record, self.answer, limits)

    def answer(self, raw: bytes) -> tuple[str, int]:
        self.calls.append(raw)
        return '{"continue": true}', 0

    def post(self, headers: dict[str, str]) -> int:
        conn = http.client.HTTPConnection(warm_http.HOST, self.record.port, timeout=60)
        try:
            conn.putrequest("POST", warm_http.PATH, skip_host=True)
            for name, value in {"Content-Length": str(len(BODY)), **headers}.items():
                conn.putheader(name, value)
            conn.endheaders(BODY)
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    def connect(self) -> socket.socket:
        return socket.create_connection((warm_http.HOST, self.record.port), timeout=60)


@pytest.fixture
def listen() -> Iterator[type[Listener]]:
    made: list[Listener] = []

    def make(limits: warm_http.Limits = warm_http.Limits()) -> Listener:
        made.append(Listener(limits))
        return made[-1]

    yield make  # type: ignore[misc]
    for listener in made:
        listener.httpd.shutdown()
        listener.httpd.server_close()


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the listener closed ``sock`` (a read gives end of file or a reset)."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_a_request_for_another_host_or_from_a_web_origin_is_refused(listen: type[Listener]) -> None:
    """DNS rebinding: a web page's request reaches 127.0.0.1 under the page's own name,
    and carries its Origin."""
    listener = listen()
    port = listener.record.port
    auth = {"Authorization": listener.record.header()}
    assert listener.post({"Host": f"evil.example:{port}", **auth}) == 403
    assert listener.post({**auth}) == 403  # no Host at all
    assert listener.post({"Host": f"127.0.0.1:{port + 1}", **auth}) == 403
    origin = {"Host": f"127.0.0.1:{port}", "Origin": "http://evil.example", **auth}
    assert listener.post(origin) == 403
    assert listener.calls == []
    assert listener.post({"Host": f"127.0.0.1:{port}", **auth}) == 200
    assert listener.post({"Host": f"localhost:{port}", **auth}) == 200
    assert len(listener.calls) == 2


def test_a_connection_that_sends_nothing_is_closed(listen: type[Listener]) -> None:
    listener = listen(warm_http.Limits(request_seconds=0.5))
    with listener.connect() as sock:
        assert closed_by_server(sock)


def test_a_request_trickled_a_byte_at_a_time_is_cut_off(listen: type[Listener]) -> None:
    """Each byte comes well within a read timeout; the whole request does not come
    within the limit, so the connection is cut and the request never answered."""
    listener = listen(warm_http.Limits(request_seconds=1.0))
    start = time.monotonic()
    with listener.connect() as sock:
        sock.sendall(f"POST {warm_http.PATH} HTTP/1.1\r\n".encode())
        cut = False
        while not cut and time.monotonic() - start < 60:
            readable, _, _ = select.select([sock], [], [], 0.1)
            if readable:
                cut = closed_by_server(sock)
            else:
                try:
                    sock.sendall(b"X")
                except OSError:
                    cut = True
        assert cut
    assert listener.calls == []


def test_connections_past_the_limit_are_closed_and_threads_stay_bounded(
    listen: type[Listener],
) -> None:
    limits = warm_http.Limits(connections=2, request_seconds=3600)  # only the cap closes
    listener = listen(limits)
    before = threading.active_count()
    held = [listener.connect() for _ in range(limits.connections)]
    extra = [listener.connect() for _ in range(20)]
    try:
        for sock in extra:
            assert closed_by_server(sock)
        # A handler thread and its deadline's timer per connection held, no more.
        assert threading.active_count() <= before + 2 * limits.connections
    finally:
        for sock in [*held, *extra]:
            sock.close()
    ok = {"Host": f"127.0.0.1:{listener.record.port}", "Authorization": listener.record.header()}
    assert wait_for(lambda: _answered(listener, ok))


def _answered(listener: Listener, headers: dict[str, str]) -> bool:
    try:
        return listener.post(headers) == 200
    except (ConnectionError, http.client.HTTPException):
        return False  # a slot not yet given back by a closed connection's thread


def test_an_oversized_request_is_refused_before_its_body_is_read(listen: type[Listener]) -> None:
    listener = listen()
    ok = {"Host": f"127.0.0.1:{listener.record.port}", "Authorization": listener.record.header()}
    assert listener.post({**ok, "Content-Length": str(10**9)}) == 413
    assert listener.post({**ok, "Content-Length": "-1"}) == 413
    assert listener.calls == []
