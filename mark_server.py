"""A reference Mark Protocol server over HTTP (standard library only) and QUIC.

    $ MARK_TOKEN=dev-secret python mark_server.py --root ./store      # http://127.0.0.1:6309
    $ MARK_TOKEN=dev-secret python mark_server.py --root ./store --quic   # and mark://127.0.0.1:6309

    >>> import tempfile
    >>> from mark_server import serve
    >>> with serve(tempfile.mkdtemp(), token="dev-secret", log=None) as server:  # a free loopback port
    ...     print(server.url)                                  # MarkClient(server.url, token=...)
    http://127.0.0.1:...

It speaks the Mark-over-HTTP binding (the Mark verb is the HTTP method, the
Mark request and response are the HTTP bodies, always HTTP 200) and, with
--quic (aioquic needed then, and only then), Mark over QUIC as the real
Demarkus servers do, answering as they answer.  It keeps the Mark store's
semantics: FETCH, LIST, VERSIONS, PUBLISH, APPEND, ARCHIVE;
versions 1, 2, 3 ... per document, immutable, each stored with a SHA-256
hash chain; `expected-version` checked and the next version created as one
atomic step, under a lock that other servers on the same root honour too.
It is a development and test peer for mark_publish.py, never imported by it.

The store on disk is the Mark layout:

    ROOT/doc.md                   symlink to versions/doc.md.vN (swapped atomically)
    ROOT/versions/doc.md.v1       "---\\nversion: ...\\n---\\n" then the body, never changed
    ROOT/versions/doc.md.v2       adds previous-hash: sha256-<hex of the v1 file's bytes>
    ROOT/versions/doc.md.archived present while the document is archived
    ROOT/versions/.lock           the store's write lock

A version is acknowledged only once every byte of it, its directory entry
and the link's swap are on disk (fsync); whatever a crash leaves before
that (a version file no link reaches, a temporary link) is swept away at
start and when met.  No document path can reach the store's own files:
segments like `.x`, `x.v1`, `x.archived` and `v1`, and `/health`, are refused.

Writes need a capability token, kept only as a SHA-256 hash: a dev token
(MARK_TOKEN, or `serve(token=...)`) may publish everywhere; `--tokens FILE`
reads a Demarkus TOML token file (Python 3.11+; see `load_grants`), whose
`read` grants also make their paths private.  With no token configured,
every write is refused: secure by default.
"""

import argparse
import asyncio
import contextlib
import datetime
import fnmatch
import hashlib
import ipaddress
import math
import os
import re
import socket
import ssl
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Dict, List, NamedTuple, Optional, TextIO, Tuple
from urllib.parse import quote, unquote

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

__version__ = "0.3.0"  # the release this file is from; vendored copies keep saying it
__all__ = ["serve", "MarkServer", "main"]

MAX_METADATA = 64 * 1024
MAX_DOCUMENT = 10 * 1024 * 1024
MAX_PATH, MAX_SEGMENT = 1024, 200  # bytes; file systems refuse 255 and more a name
VERBS = ("FETCH", "LIST", "VERSIONS", "PUBLISH", "APPEND", "ARCHIVE")
WRITES = ("PUBLISH", "APPEND", "ARCHIVE")


def serve(root, host: str = "127.0.0.1", port: int = 0, token: Optional[str] = None,
          tokens_file=None, log: Optional[TextIO] = sys.stderr, quic: bool = False,
          quic_port: Optional[int] = None, tls_cert=None, tls_key=None,
          rate_limit: Optional[float] = None, rate_burst: Optional[int] = None) -> "MarkServer":
    """Start a server on a background thread; returns it running (`.url`, `.close()`).

    `token` defaults to $MARK_TOKEN; `log` gets one line per request (None: silent).
    `rate_limit` (requests per second per client address, 0: off) and
    `rate_burst` default to $DEMARKUS_RATE_LIMIT and $DEMARKUS_RATE_BURST,
    else 50 and 100, as the real server's do.
    With `quic=True` it also serves Mark over QUIC (`.mark_url`; needs aioquic)
    on UDP `quic_port`, by default the HTTP port's number, with the
    certificate `tls_cert`/`tls_key` (PEM files) or else a development
    certificate made now (`.certificate_pem`).
    """
    server = MarkServer(root, host, port, token if token is not None else os.environ.get("MARK_TOKEN"),
                        tokens_file, log, rate_limit, rate_burst)
    if quic:
        try:
            server.listen_quic(quic_port, tls_cert, tls_key)
        except BaseException:
            server.server_close()
            raise
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     name="mark-server", daemon=True).start()
    return server


class MarkServer(ThreadingHTTPServer):
    """The HTTP server and its store; a context manager that closes itself.

    What one server holds is bounded, and so is what one client address
    may take of it: MAX_CONNECTIONS connections (HTTP) and requests being
    read (QUIC) at once, PER_CLIENT of them from one address (one more is
    closed, or its stream ended, as it arrives); MAX_BUFFERED bytes of
    request bodies in memory, a quarter of it (or one whole request) from
    one address, taken as the bytes arrive, while bodies of at most
    SMALL_BODY bytes need none (a request waits for room); MAX_STREAMS
    streams open at once on one QUIC connection, as the real server's
    DEMARKUS_MAX_STREAMS; and REQUEST_DEADLINE seconds to receive a whole
    request (a client trickling one is dropped, nothing stored).
    Each client address may send `rate_limit` requests a second, in bursts
    of `rate_burst`; one more is refused unread, as the real server refuses
    it: over QUIC its stream is ended unanswered, over HTTP it is answered
    429 with Retry-After.
    """

    daemon_threads = True
    request_queue_size = 256  # the default 5 resets connections when clients arrive in a burst
    MAX_CONNECTIONS = 64
    PER_CLIENT = 16
    MAX_BUFFERED = 128 * 1024 * 1024
    SMALL_BODY = 64 * 1024
    QUIC_WINDOW = 256 * 1024  # flow-control credit a QUIC stream gets ahead of what was taken in
    REQUEST_DEADLINE = 60.0

    def __init__(self, root, host: str, port: int, token: Optional[str], tokens_file=None,
                 log: Optional[TextIO] = sys.stderr, rate_limit: Optional[float] = None,
                 rate_burst: Optional[int] = None):
        self.limit = _RateLimit(_setting("rate_limit", rate_limit, "DEMARKUS_RATE_LIMIT", 50.0, float),
                                _setting("rate_burst", rate_burst, "DEMARKUS_RATE_BURST", 100, int))
        self.store = Store(Path(root), log)
        self.log = log
        self._open: Dict[socket.socket, str] = {}  # connections being served, and whose, so close() can drop them
        self._open_lock = threading.Lock()
        self.grants = load_grants(token, tokens_file)
        self.slots = threading.BoundedSemaphore(self.MAX_CONNECTIONS)
        self.holders = _Holders(self.PER_CLIENT)
        self.buffered = _Budget(self.MAX_BUFFERED, max(self.MAX_BUFFERED // 4, MAX_DOCUMENT + MAX_METADATA))
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), Handler)
        host, port = self.server_address[:2]
        self.url = f"http://{_host_port(host, port)}"
        self.mark_url: Optional[str] = None
        self.certificate_pem: Optional[bytes] = None
        self._quic: Optional[_QuicListener] = None

    def listen_quic(self, port: Optional[int] = None, tls_cert=None, tls_key=None) -> None:
        """Serve Mark over QUIC too, on UDP `port` (default: the HTTP port's number)."""
        host = self.server_address[0]
        self._quic = _QuicListener(self, host, self.server_address[1] if port is None else port, tls_cert, tls_key)
        self.mark_url = f"mark://{_host_port(host, self._quic.port)}"
        self.certificate_pem = self._quic.certificate_pem

    def process_request(self, request, client_address) -> None:
        if not self.holders.take(client_address[0]):
            request.close()  # this client holds its share: it sees the connection closed
            return
        if not self.slots.acquire(blocking=False):
            self.holders.give(client_address[0])
            request.close()  # full: the client sees the connection closed and may come back
            return
        with self._open_lock:
            self._open[request] = client_address[0]
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:
        with self._open_lock:
            client = self._open.pop(request, None)
        super().shutdown_request(request)
        if client is not None:
            self.slots.release()
            self.holders.give(client)

    def handle_error(self, request, client_address) -> None:
        """A connection that broke: one line in the log, never a traceback on stderr."""
        if self.log:
            self.log.write(f"connection from {client_address[0]} broke: {sys.exc_info()[0].__name__}\n")

    def respond(self, verb: str, where: str, read: Callable[[], Tuple[str, bytes]]) -> Tuple[str, bytes]:
        """One Mark exchange, whichever transport carried it: its status and the whole response.

        `read()` gives the request's path and the bytes after its request
        line, or raises MarkFailure; `where` names the path in the log.
        """
        try:
            status, metadata, body = self._answer(verb, read)
        except MarkFailure as failure:
            status, metadata, body = failure.status, failure.metadata, failure.body
        except Exception as error:  # the server keeps serving, whatever one request did
            status, metadata, body = "server-error", {}, MarkFailure("server-error", type(error).__name__).body
        if self.log:
            shown = verb if verb.isascii() and verb.isalpha() else repr(verb[:40])
            self.log.write(f"{shown} {where[:200]!r} {status}\n")
        return status, write_message(dict(metadata, status=status), body).encode("utf-8")

    def _answer(self, verb: str, read: Callable[[], Tuple[str, bytes]]) -> Tuple[str, Dict[str, str], str]:
        path, raw = read()
        if verb not in VERBS:
            raise MarkFailure("bad-request", f"unknown verb {verb[:40]!r}")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MarkFailure("bad-request", "request is not UTF-8") from None
        metadata, body = read_request(text)
        if not (verb == "FETCH" and path == "/health"):
            version = _VERSION_PATH.fullmatch(path) if verb == "FETCH" else None
            checked = version.group(1) if version else path
            if verb == "LIST" and not checked.endswith("/"):
                checked += "/"  # LIST /private lists what /private/** protects
            self.grants.check(metadata.get("auth"), verb, checked)
        return dispatch(self.store, verb, path, metadata, body)

    def refused(self, address: str) -> None:
        if self.log:
            self.log.write(f"a request from {address} refused unread: over the rate limit\n")

    def close(self) -> None:
        """Stop serving and drop every open connection, keep-alive ones included."""
        self.shutdown()
        self.server_close()
        if self._quic:
            self._quic.close()
            self._quic = None
        with self._open_lock:
            for request in self._open:
                try:
                    request.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def __enter__(self) -> "MarkServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Handler(BaseHTTPRequestHandler):
    """Turns each HTTP request, whatever its method, into one Mark exchange."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else headers and body, written apart, wait ~40 ms for an ACK
    timeout = 30  # a client that stops sending cannot hold a thread forever

    def __getattr__(self, name: str):
        if name.startswith("do_"):  # any HTTP method is a Mark verb to answer
            return self.exchange
        raise AttributeError(name)

    def exchange(self) -> None:
        wait = self.server.limit.wait(self.client_address[0])
        if wait:
            # Refused unread: the unread body must not be taken for the next request.
            self.close_connection = True
            self.send_response(429)
            self.send_header("Retry-After", str(math.ceil(wait)))
            self.send_header("Content-Length", "0")
            self.send_header("Connection", "close")
            self.end_headers()
            self.server.refused(self.client_address[0])
            return
        self.held = 0  # bytes of the body taken from the server's budget
        try:
            _, payload = self.server.respond(self.command, self.path, self.read_request)
        finally:
            self.server.buffered.give(self.held, self.client_address[0], self)
        self.send_response(200)
        self.send_header("Content-Type", "text/markdown; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":  # HTTP: an answer to HEAD has no body
            self.wfile.write(payload)

    def read_request(self) -> Tuple[str, bytes]:
        """The Mark request this HTTP request carries: its path and the bytes after its request line."""
        lengths = self.headers.get_all("Content-Length") or ["0"]
        length = lengths[0]
        if self.headers.get("Transfer-Encoding") or len(lengths) > 1 or not _is_digits(length) or len(length) > 18:
            # The rest of the stream cannot be framed: it must never be read as another request.
            self.close_connection = True
            raise MarkFailure("bad-request", "send one Content-Length of ASCII digits")
        limit = min(MAX_DOCUMENT + MAX_METADATA, self.server.buffered.limit)
        if int(length) > limit:
            # Read a moderately oversized body, keeping none of it, so the client
            # sees the answer, not a reset; past that, just close: the unread
            # rest must not be parsed as another request.
            self.close_connection = True
            self.receive(min(int(length), 4 * MAX_DOCUMENT), keep=False)
            raise MarkFailure("too-large", f"requests are limited to {limit} bytes")
        raw = self.receive(int(length))
        if len(raw) != int(length):  # the client went away mid-body: half a request is no request
            self.close_connection = True
            raise MarkFailure("bad-request", "the request body was cut off")
        try:
            return unquote(self.path, errors="strict"), raw
        except UnicodeDecodeError:
            raise MarkFailure("bad-request", "request is not UTF-8") from None

    def handle_one_request(self) -> None:
        """One request, which must arrive whole (line, headers, body) by REQUEST_DEADLINE.

        A client trickling any part of it, or idling between requests, is
        dropped then: its connection is shut, and what it sent is not stored.
        """
        self.watchdog = threading.Timer(self.server.REQUEST_DEADLINE, self.drop)
        self.watchdog.daemon = True
        self.watchdog.start()
        try:
            super().handle_one_request()
        finally:
            self.watchdog.cancel()

    def drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def receive(self, length: int, keep: bool = True) -> bytes:
        """The body; shorter if the client stopped or was dropped.

        A body kept and larger than SMALL_BODY takes its bytes from the
        server's budget as they arrive, waiting for room (until the
        deadline); with `keep=False` it is read and dropped as it comes.
        Once it is in, the request deadline no longer applies.
        """
        chunks, size = [], 0
        budgeted = keep and length > self.server.SMALL_BODY
        while size < length:
            try:
                chunk = self.rfile.read1(min(1 << 16, length - size))
            except OSError:  # dropped at the deadline, or the connection broke
                break
            if not chunk:
                break
            if budgeted:
                client, deadline = self.client_address[0], self.server.REQUEST_DEADLINE
                if not self.server.buffered.take(len(chunk), client, self, deadline):
                    break
                self.held += len(chunk)
            if keep:
                chunks.append(chunk)
            size += len(chunk)
        if size == length:
            self.watchdog.cancel()
        return b"".join(chunks)

    def log_message(self, format, *args) -> None:
        """Silenced: `exchange` logs one line per request, never a token."""


class _RateLimit:
    """Requests a second per client address, with bursts: a bucket of tokens each.

    A bucket holds at most `burst` tokens and gains `rate` a second; a
    request takes one.  A rate of 0 lets everything through.
    """

    def __init__(self, rate: float, burst: int):
        if rate and burst < 1:
            raise ValueError("rate_burst must be 1 or more while rate_limit is on: 0 would refuse everything")
        self.rate, self.burst = rate, burst
        self._buckets: Dict[str, Tuple[float, float]] = {}  # address: (tokens, when counted)
        self._lock = threading.Lock()

    def wait(self, address: str) -> float:
        """0 when a request from `address` may go ahead (and takes its token), else the seconds until one may."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic()
        with self._lock:
            tokens, then = self._buckets.get(address, (self.burst, now))
            tokens = min(self.burst, tokens + (now - then) * self.rate)
            self._buckets[address] = (tokens - 1 if tokens >= 1 else tokens, now)
            if len(self._buckets) > 4096:  # forget the addresses whose buckets are full again
                full = self.burst / self.rate
                self._buckets = {key: value for key, value in self._buckets.items() if now - value[1] < full}
            return 0.0 if tokens >= 1 else (1 - tokens) / self.rate


def _setting(name: str, given, variable: str, default, kind):
    """A rate setting: `given`, else $`variable`, else `default`; ValueError naming it when not a number >= 0."""
    value = given if given is not None else os.environ.get(variable, default)
    try:
        value = kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} (${variable}) must be a number, not {value!r}") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name} (${variable}) must be 0 or more, not {value!r}")
    return value


class _Holders:
    """How many connections or requests each client address holds; at most `most` each."""

    def __init__(self, most: int):
        self.most = most
        self._held: Counter = Counter()
        self._lock = threading.Lock()

    def take(self, client: str) -> bool:
        with self._lock:
            if self._held[client] >= self.most:
                return False
            self._held[client] += 1
            return True

    def give(self, client: str) -> None:
        with self._lock:
            self._held[client] -= 1
            if not self._held[client]:
                del self._held[client]


class _Budget:
    """Bytes of request bodies the server holds at once: `limit` in all, `share` from one client.

    Requests take bytes as they arrive and give them all back when answered;
    one that finds no room waits (HTTP's threads in `take`, QUIC's
    coroutines in `take_async`).  Requests that each hold part of their
    body could all wait on each other; so one of them at a time, the first
    to find no room, may go past the limit (by one request at most) and finish.
    """

    def __init__(self, limit: int, share: int):
        self.limit, self.share, self.used = limit, min(share, limit), 0
        self._by: Counter = Counter()
        self._room = threading.Condition()
        self._waiting: set = set()  # (loop, asyncio.Event) of coroutines waiting for room
        self._beyond: Optional[object] = None  # the request that may go past the limit

    def _took(self, size: int, client: str, request: object) -> bool:
        if self.used + size > self.limit or self._by[client] + size > self.share:
            if self._beyond not in (None, request):
                return False
            self._beyond = request
        self.used += size
        self._by[client] += size
        return True

    def take(self, size: int, client: str, request: object, timeout: float) -> bool:
        """Take `size` bytes for `request` of `client`, waiting up to `timeout` seconds for room."""
        with self._room:
            return self._room.wait_for(lambda: self._took(size, client, request), timeout)

    async def take_async(self, size: int, client: str, request: object) -> None:
        """Take `size` bytes for `request` of `client`, waiting for room as long as the caller lets it."""
        loop = asyncio.get_running_loop()
        while True:
            event = asyncio.Event()
            with self._room:
                if self._took(size, client, request):
                    return
                self._waiting.add((loop, event))
            try:
                await event.wait()
            finally:
                with self._room:
                    self._waiting.discard((loop, event))

    def give(self, size: int, client: str, request: object) -> None:
        """Give back all that `request` of `client` took: `size` bytes."""
        if not size:  # most requests took none: no one to wake (and none of them went past the limit)
            return
        with self._room:
            self.used -= size
            self._by[client] -= size
            if self._by[client] <= 0:
                del self._by[client]
            if self._beyond is request:
                self._beyond = None
            self._room.notify_all()
            for loop, event in self._waiting:
                loop.call_soon_threadsafe(event.set)


class MarkFailure(Exception):
    """A request answered with a Mark error status.

    The body is the real server's: a title made from the status, then
    `detail` ("\n# Not found\n\n/a.md not found\n"), unless `body` is given.
    """

    def __init__(self, status: str, detail: str, body: Optional[str] = None, **metadata: str):
        super().__init__(detail)
        self.status, self.detail, self.metadata = status, detail, metadata
        title = status[:1].upper() + status[1:].replace("-", " ")
        self.body = body if body is not None else f"\n# {title}\n\n{detail}\n"


def _host_port(host: str, port: int) -> str:
    return f"{'[' + host + ']' if ':' in host else host}:{port}"


# ----------------------------------------------------------- Mark over QUIC

class _QuicListener:
    """Mark over QUIC for a MarkServer: one request per bidirectional stream.

    The client writes "VERB /path\n", the metadata block and the body, and
    ends its side; the answer is written back and the stream ended.  aioquic
    is asyncio-only, so the listener runs its own event loop on a thread;
    the store's work runs on worker threads, as it does for HTTP.

    What a client can hold is bounded as over HTTP (MarkServer says how),
    and more: a stream gets flow-control credit only for what its handler
    has taken in (QUIC_WINDOW bytes ahead), not, as aioquic grants it, for
    what arrived, so a stream waiting for a slot or for room in the budget
    holds QUIC_WINDOW bytes at most.  A stream reset by the client frees
    its slot at once; one past REQUEST_DEADLINE is reset, and one past the
    size limit is answered too-large and told to stop sending: neither is
    buffered.
    """

    def __init__(self, server: "MarkServer", host: str, port: int, tls_cert=None, tls_key=None):
        try:
            from aioquic.asyncio import QuicConnectionProtocol
            from aioquic.asyncio.server import QuicServer
            from aioquic.quic.configuration import QuicConfiguration
            from aioquic.quic.connection import MAX_STREAM_DATA_FRAME_CAPACITY
            from aioquic.quic.events import StreamDataReceived, StreamReset
            from aioquic.quic.packet import QuicFrameType
        except ImportError:
            raise ImportError("Mark over QUIC needs aioquic: pip install 'mark-publish[quic]'") from None
        from cryptography.hazmat.primitives.serialization import Encoding

        window = server.QUIC_WINDOW
        max_streams = _setting("max_streams", None, "DEMARKUS_MAX_STREAMS", 10, int) or 1

        class Protocol(QuicConnectionProtocol):
            """One client's connection: its address, which streams it ended, what each handler took in."""

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.ended: set = set()
                self.taken: Dict[int, int] = {}
                self.address = ""
                limit = self._quic._local_max_streams_bidi  # set before the handshake announces it
                limit.value = limit.sent = max_streams
                self._quic._write_stream_limits = self._credit

            def datagram_received(self, data, addr) -> None:
                self.address = addr[0]  # the client's, for what it may hold
                super().datagram_received(data, addr)

            def quic_event_received(self, event) -> None:
                if isinstance(event, StreamDataReceived) and event.end_stream:
                    self.ended.add(event.stream_id)
                elif isinstance(event, StreamReset) and event.stream_id in self._stream_readers:
                    self._stream_readers[event.stream_id].feed_eof()  # its handler sees it cut off
                super().quic_event_received(event)

            def took(self, stream: int, size: int) -> None:
                """The handler took `size` more bytes of `stream` in: credit for as many more."""
                self.taken[stream] = self.taken.get(stream, 0) + size
                self.transmit()

            def done(self, stream: int) -> None:
                self.taken.pop(stream, None)
                self.ended.discard(stream)
                self._stream_readers.pop(stream, None)

            def _credit(self, builder, space, stream) -> None:
                """aioquic's MAX_STREAM_DATA, granted for what the handler took in, not for what arrived."""
                granted = stream.max_stream_data_local
                if granted and self.taken.get(stream.stream_id, 0) + window > granted:
                    stream.max_stream_data_local = self.taken[stream.stream_id] + window
                if stream.max_stream_data_local_sent != stream.max_stream_data_local:
                    buf = builder.start_frame(QuicFrameType.MAX_STREAM_DATA,
                                              capacity=MAX_STREAM_DATA_FRAME_CAPACITY,
                                              handler=self._quic._on_max_stream_data_delivery,
                                              handler_args=(stream,))
                    buf.push_uint_var(stream.stream_id)
                    buf.push_uint_var(stream.max_stream_data_local)
                    stream.max_stream_data_local_sent = stream.max_stream_data_local

        self.server = server
        configuration = QuicConfiguration(is_client=False, alpn_protocols=["mark"], max_stream_data=window)
        if tls_cert:
            configuration.load_cert_chain(tls_cert, tls_key)
        else:
            configuration.certificate, configuration.private_key = _development_certificate()
        self.certificate_pem = configuration.certificate.public_bytes(Encoding.PEM)
        self.loop = asyncio.new_event_loop()
        self._tasks: set = set()  # requests being answered; the loop keeps only weak references
        threading.Thread(target=self._run, name="mark-quic", daemon=True).start()

        async def listen():
            self._slots = asyncio.Semaphore(server.MAX_CONNECTIONS)
            return await self.loop.create_datagram_endpoint(
                lambda: QuicServer(configuration=configuration, create_protocol=Protocol,
                                   stream_handler=self._stream),
                local_addr=(host, port))

        try:
            self._transport, self._quic = asyncio.run_coroutine_threadsafe(listen(), self.loop).result()
        except BaseException:
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise
        self.port = self._transport.get_extra_info("sockname")[1]

    def _run(self) -> None:
        self.loop.run_forever()
        self.loop.close()

    def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        protocol, stream = writer.transport.protocol, writer.get_extra_info("stream_id")
        address = protocol.address
        if self.server.limit.wait(address) or not self.server.holders.take(address):
            # As the real server refuses: the stream ended, unread and unanswered.
            protocol._quic.stop_stream(stream, 0)
            writer.write_eof()
            protocol.done(stream)
            self.server.refused(address)
            return
        task = self.loop.create_task(self._exchange(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda _: self.server.holders.give(address))

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        protocol, stream = writer.transport.protocol, writer.get_extra_info("stream_id")
        held: List[int] = [0]  # bytes taken from the server's budget
        try:
            async with self._slots:
                try:
                    data = await asyncio.wait_for(self._receive(reader, protocol, stream, held),
                                                  self.server.REQUEST_DEADLINE)
                except asyncio.TimeoutError:
                    # A client trickling a request is dropped, nothing stored, nothing more read.
                    # Its bytes go back first: once it is told, none of them are held.
                    self.server.buffered.give(held[0], protocol.address, held)
                    held[0] = 0
                    protocol._quic.stop_stream(stream, 0)
                    protocol._quic.reset_stream(stream, 0)
                    protocol.transmit()
                    return
            if data is not None and stream not in protocol.ended:
                # Reset, or its connection ended: half a request is no request.
                if self.server.log:
                    self.server.log.write("a QUIC request was cut off before its end: nothing stored\n")
                return
            if data is None:  # past the size limit: answered, and told to stop sending
                protocol._quic.stop_stream(stream, 0)
            await self._answer(data, writer)
        finally:
            protocol.done(stream)
            self.server.buffered.give(held[0], protocol.address, held)

    async def _answer(self, data: Optional[bytes], writer: asyncio.StreamWriter) -> None:
        line, newline, rest = (data or b"").partition(b"\n")
        verb, space, path = line.partition(b" ")

        def read() -> Tuple[str, bytes]:
            if data is None:
                raise MarkFailure("too-large", f"requests are limited to {MAX_DOCUMENT + MAX_METADATA} bytes")
            if not newline or not space:
                raise MarkFailure("bad-request", "a request starts with a line 'VERB /path'")
            try:
                return path.decode("utf-8"), rest
            except UnicodeDecodeError:
                raise MarkFailure("bad-request", "request is not UTF-8") from None

        shown_verb, shown_path = verb.decode("utf-8", "replace"), path.decode("utf-8", "replace")
        _, payload = await self.loop.run_in_executor(None, self.server.respond, shown_verb, shown_path, read)
        writer.write(payload)
        writer.write_eof()

    async def _receive(self, reader: asyncio.StreamReader, protocol, stream: int,
                       held: List[int]) -> Optional[bytes]:
        """The whole request (or what came before the stream was cut off); None past the size limit.

        Past SMALL_BODY bytes, each chunk is taken from the server's budget,
        waiting for room, before its credit is given back to the client.
        """
        limit = MAX_DOCUMENT + MAX_METADATA + MAX_PATH + 16  # the request line, too
        chunks, size = [], 0
        while chunk := await reader.read(self.server.QUIC_WINDOW):
            size += len(chunk)
            if size > limit:
                return None
            if size > self.server.SMALL_BODY:
                await self.server.buffered.take_async(len(chunk), protocol.address, held)
                held[0] += len(chunk)
            chunks.append(chunk)
            protocol.took(stream, len(chunk))
        return b"".join(chunks)

    def close(self) -> None:
        """Close every connection (clients see it closed at once) and stop listening."""
        async def stop():
            self._quic.close()
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:  # let them end here, not be collected half-done once the loop is gone
                await asyncio.wait(list(self._tasks), timeout=1.0)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)


def _development_certificate():
    """A self-signed certificate for localhost, 127.0.0.1 and ::1, valid for a day, and its key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    addresses = [x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", "::1")]
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), *addresses]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return certificate, key


def fingerprint(certificate_pem: bytes) -> str:
    """The SHA-256 fingerprint of a PEM certificate, as AB:CD:... (what `openssl x509 -fingerprint` shows)."""
    der = ssl.PEM_cert_to_DER_cert(certificate_pem.decode("ascii"))
    return ":".join(f"{b:02X}" for b in hashlib.sha256(der).digest())


# ------------------------------------------------------------------ store

class Store:
    """Versioned documents under a root directory, in the Mark layout: naming,
    locking, reading and writing versions.  What each verb makes of them is
    in the functions below the class, from `dispatch` on."""

    def __init__(self, root: Path, log: Optional[TextIO] = None):
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        self.versions = self.root / "versions"
        self.versions.mkdir(exist_ok=True)
        self.log = log
        self._write_lock = threading.Lock()  # threads of this process; flock covers processes
        self._histories: Dict[str, _History] = {}
        self._history_lock = threading.Lock()
        with self.writing():
            self.sweep()

    @contextlib.contextmanager
    def writing(self):
        """Hold the store's write lock, which other processes on the same root honour too.

        Every write checks `expected-version` and creates the next version
        under it, so two servers on one root never both win a race, and a
        version file that no link reaches cannot be one being written now.
        """
        with self._write_lock, open(self.versions / ".lock", "a") as lock:
            if fcntl is not None:  # on systems without it, one server per root
                fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def sweep(self) -> None:
        """Settle what a crash or a hand can leave, at start; every change is logged.

        A crash between a write's two steps leaves a temporary link, or a
        version file one past the version the link reaches and newer than
        the link: never acknowledged (the link's swap is), so removed.
        Anything else is kept: a link spelled otherwise (absolute, ./) is
        read by where it leads, a file where the link should be that holds
        a version's bytes is made that link again, and a link to an older
        version while newer files exist is a rollback, recorded as a new
        version with that body (history keeps every number).
        """
        newest: Dict[str, int] = {}
        for directory, _, files in os.walk(self.root):
            for file in files:
                path = Path(directory, file)
                if self.versions in path.parents:
                    match = re.fullmatch(r"(.+)\.v([0-9]+)", str(path.relative_to(self.versions)))
                    if match:
                        newest[match.group(1)] = max(newest.get(match.group(1), 0), int(match.group(2)))
                elif _TEMPORARY_LINK.fullmatch(file) and path.is_symlink():
                    self._say(f"removed {path}: the temporary link of a write that never completed")
                    path.unlink()
        for name, version in sorted(newest.items()):
            self._settle(name, version)

    def _settle(self, name: str, newest: int) -> None:
        """Make document `name`, whose newest version file is `newest`, whole again (see `sweep`)."""
        link = self.root / name
        if link.exists() and not link.is_symlink():
            data = link.read_bytes()
            copy = next((v for v in range(newest, 0, -1) if self.version_file(name, v).exists()
                         and self.version_file(name, v).read_bytes() == data), None)
            if copy is None:
                self._say(f"kept /{name} as it is: a file stands where its link should, unlike any version")
                return
            os.replace(self._temporary_link(name, copy), link)
            self._say(f"made /{name} a link to version {copy} again: a file held that version's bytes")
        linked = self._linked(name)
        if linked == newest:
            return
        if linked + 1 == newest and self._leftover(name, newest):
            self._say(f"removed {self.version_file(name, newest)}: a write that never completed")
            self.version_file(name, newest).unlink()
        elif not linked:
            self._say(f"kept the versions of /{name} as they are: no link says which is current")
        else:
            rollback = self.read_version(name, linked)
            self.create(name, newest + 1, rollback.body, self.version_file(name, newest).read_bytes(),
                        rollback.publisher)
            self._say(f"recorded /{name} linked to version {linked} of {newest} as version {newest + 1}, "
                      "a rollback; no version removed")

    def _leftover(self, name: str, version: int) -> bool:
        """Whether version file `version` is newer than the document's link: written after its last swap."""
        try:
            return self.version_file(name, version).stat().st_mtime_ns >= os.lstat(self.root / name).st_mtime_ns
        except FileNotFoundError:
            return not (self.root / name).is_symlink()

    def _say(self, line: str) -> None:
        if self.log:
            self.log.write(f"store: {line}\n")

    def _linked(self, name: str) -> int:
        """The version a document's link reaches; 0 when none does."""
        try:
            return self.current(name)
        except MarkFailure:
            return 0

    def name_of(self, path: str) -> str:
        """The store-relative name of a document path; refuses anything outside ROOT.

        Segments that could land on the store's own files (NAME.vN,
        NAME.archived, a hidden name), that FETCH reads otherwise (a bare vN,
        /health) or that the file system would refuse are bad requests, and
        a document is never the parent of another.
        """
        if not path.startswith("/") or any(ord(c) < 0x20 or c == "\x7f" for c in path):
            raise MarkFailure("bad-request", "path must start with / and hold no control characters")
        segments = path[1:].split("/")
        if any(s in ("", ".", "..") for s in segments) or segments[0] == "versions":
            raise MarkFailure("not-found", f"{_shown(path)} not found")
        if len(path.encode("utf-8")) > MAX_PATH or any(len(s.encode("utf-8")) > MAX_SEGMENT for s in segments):
            raise MarkFailure("bad-request", f"paths are limited to {MAX_PATH} bytes, {MAX_SEGMENT} a segment")
        if path == "/health" or any(_RESERVED_SEGMENT.fullmatch(s) for s in segments):
            raise MarkFailure("bad-request",
                              f"{_shown(path)}: names like .x, x.v1, x.archived, v1 and /health are reserved")
        name = "/".join(segments)
        parent = (self.root / name).parent.resolve()
        if parent != self.root and self.root not in parent.parents:
            raise MarkFailure("not-found", f"{_shown(path)} not found")  # a symlinked directory escapes
        for depth in range(1, len(segments)):
            if (self.root.joinpath(*segments[:depth])).is_symlink():
                raise MarkFailure("not-found",
                                  f"{_shown(path)} not found: /{'/'.join(segments[:depth])} is a document")
        return name

    def current(self, name: str) -> int:
        """The current version of a document, 0 when it does not exist."""
        link = self.root / name
        if not link.is_symlink():
            if link.exists():
                raise MarkFailure("not-found", f"/{name} is not a document")
            return 0
        own = re.escape(os.path.relpath(self.versions / name, link.parent)) + r"\.v([0-9]+)"
        match = re.fullmatch(own, os.readlink(link))
        if not match:  # spelled otherwise (absolute, ./): where does it lead?
            real = os.path.realpath(link)
            match = re.fullmatch(re.escape(str(self.versions / name)) + r"\.v([0-9]+)", real)
            if not match or not os.path.isfile(real):
                raise MarkFailure("not-found", f"/{name} is not a document")  # a link out of the store
        return int(match.group(1))

    def version_file(self, name: str, version: int) -> Path:
        return self.versions / f"{name}.v{version}"

    def read_version(self, name: str, version: int) -> "_Stored":
        data = self.version_file(name, version).read_bytes()
        header, body = read_frontmatter(data.decode("utf-8"))
        return _Stored(data, header, body)

    def create(self, name: str, version: int, body: str, previous: Optional[bytes],
               publisher: Dict[str, str]) -> None:
        """Write version file N once (O_EXCL, every byte, fsync), then point the document at it.

        `previous` is the bytes of version N-1's file (None for version 1),
        which the new file's previous-hash chains to; `publisher` is the
        writer's own metadata (agent: mcp), kept with it.  Called under the
        store's write lock.  Should anything fail before the link reaches the
        new file, the file is removed and the error goes to the client as
        server-error: nothing half-written is ever acknowledged or left to
        wedge the next writer.
        """
        header = {**publisher, "version": str(version)}
        if previous is not None:
            header["previous-hash"] = _sha256(previous)
        target = self.version_file(name, version)
        link = self.root / name
        existing = next(folder for folder in (target.parent, *target.parent.parents) if folder.exists())
        real = existing.resolve()
        if real != self.versions and self.versions not in real.parents:  # a link planted in versions/
            raise MarkFailure("not-found", f"/{name} cannot be stored")
        _make_directories(target.parent)
        _make_directories(link.parent)
        if target.exists():
            if not self._leftover(name, version):  # never remove what may have been acknowledged
                raise MarkFailure("server-error", f"/{name}: version {version} exists already")
            target.unlink()  # no link reaches it, and it is newer than the link: a crash left it
        temporary: Optional[Path] = None
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
            try:
                _write_all(fd, write_message(header, body).encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)
            _fsync_directory(target.parent)
            temporary = self._temporary_link(name, version)
            os.replace(temporary, link)
        except BaseException:
            if temporary:
                _remove(temporary)
            if self._linked(name) < version:
                _remove(target)
            raise
        _fsync_directory(link.parent)  # the swap survives a power cut, not just a crash

    def _temporary_link(self, name: str, version: int) -> Path:
        """A new link to version `version`, beside the document's link, to swap in."""
        link = self.root / name
        temporary = link.parent / f".{link.name}.{uuid.uuid4().hex}"
        os.symlink(os.path.relpath(self.version_file(name, version), link.parent), temporary)
        return temporary

    def history(self, name: str, current: int) -> "_History":
        """What VERSIONS says of versions 1 to `current`, read from disk once: versions never change."""
        with self._history_lock:
            history = self._histories.setdefault(name, _History())
            while len(history.modified) < current:
                version = len(history.modified) + 1
                stored = self.read_version(name, version)
                if history.valid_up_to == version - 1 and stored.header.get("previous-hash") == history.last:
                    history.valid_up_to = version
                history.modified.append(self.modified(name, version))
                history.last = _sha256(stored.data)
            return history

    def archive_marker(self, name: str) -> Path:
        return self.versions / f"{name}.archived"

    def archived(self, name: str) -> bool:
        return self.archive_marker(name).exists()

    def modified(self, name: str, version: int) -> str:
        seconds = self.version_file(name, version).stat().st_mtime
        return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- verbs

def dispatch(store: Store, verb: str, path: str, metadata: Dict[str, str],
             body: str) -> Tuple[str, Dict[str, str], str]:
    """One Mark request against the store: its status, metadata and body (or MarkFailure)."""
    if verb == "FETCH" and path == "/health":
        return "ok", {}, "# Health Check\n\nServer is healthy.\n"
    if verb == "LIST":
        return _list(store, path)
    match = _VERSION_PATH.fullmatch(path)
    if verb == "FETCH" and match:
        return _fetch_version(store, store.name_of(match.group(1)), int(match.group(2)))
    name = store.name_of(path)
    if verb == "FETCH":
        return _fetch(store, name, metadata.get("if-none-match"))
    if verb == "VERSIONS":
        return _versions(store, name)
    with store.writing():  # the expected-version check and the write are one step
        if verb == "ARCHIVE":
            return _archive(store, name)
        return _write(store, verb, name, metadata, body)


def _fetch(store: Store, name: str, if_none_match: Optional[str]):
    version = store.current(name)
    if not version:
        raise MarkFailure("not-found", f"/{name} not found")
    if store.archived(name):
        raise MarkFailure("archived", f"/{name} is archived")
    stored = store.read_version(name, version)
    etag = hashlib.sha256(stored.body.encode("utf-8")).hexdigest()
    if if_none_match == etag:
        return "not-modified", {}, ""
    return "ok", {**stored.publisher, "etag": etag, "version": str(version),
                  "modified": store.modified(name, version),
                  "content-hash": _sha256(stored.body.encode("utf-8"))}, stored.body


def _fetch_version(store: Store, name: str, version: int):
    current = store.current(name)
    if not 1 <= version <= current:
        raise MarkFailure("not-found", f"/{name}/v{version} not found")
    stored = store.read_version(name, version)
    return "ok", {**stored.publisher, "version": str(version), "current-version": str(current),
                  "modified": store.modified(name, version),
                  "content-hash": _sha256(stored.body.encode("utf-8"))}, stored.body


def _versions(store: Store, name: str):
    current = store.current(name)
    if not current:
        raise MarkFailure("not-found", f"/{name} not found")
    history = store.history(name, current)
    lines = [f"- [v{version}]({_link('/' + name)}/v{version}) - {modified}\n"
             for version, modified in enumerate(history.modified[:current], start=1)]
    body = f"\n# Version History: {_escape('/' + name)}\n\n" + "".join(reversed(lines))
    valid = history.valid_up_to >= current
    return "ok", {"total": str(current), "current": str(current),
                  "chain-valid": "true" if valid else "false"}, body


def _list(store: Store, path: str):
    directory = store.root if path == "/" else store.root / store.name_of(path.rstrip("/") or "/")
    real = directory.resolve()
    if not directory.is_dir() or store.root not in (real, *real.parents):
        raise MarkFailure("not-found", f"{path} not found")
    entries = []
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith(".") or entry == store.versions:
            continue
        slash = "/" if entry.is_dir() and not entry.is_symlink() else ""
        entries.append(f"- [{_escape(entry.name)}{slash}]({_link(entry.name)}{slash})\n")
    heading = path if path.endswith("/") else path + "/"
    return "ok", {"entries": str(len(entries))}, f"\n# Index of {_escape(heading)}\n\n" + "".join(entries)


def _write(store: Store, verb: str, name: str, metadata: Dict[str, str], body: str):
    current = store.current(name)
    expected = parse_version(metadata.get("expected-version"), required=(verb == "APPEND"))
    if verb == "APPEND" and not current:
        raise MarkFailure("not-found", f"/{name} not found")
    if verb == "APPEND" and not body:
        raise MarkFailure("bad-request", "APPEND needs a non-empty body")
    if expected is not None and expected != current:
        raise _conflict(verb, expected, current)
    publisher = _publisher_metadata(metadata)
    old = store.read_version(name, current) if current else None
    old_body = old.body if old else None
    if verb == "APPEND":  # as the real server joins: a newline only where the old text lacks one
        body = old_body + ("" if old_body.endswith("\n") else "\n") + body
        publisher = {**old.publisher, **publisher}
    archived = store.archived(name)
    if not body:
        if not archived:
            raise MarkFailure("bad-request", "an empty body only unarchives a document")
        store.archive_marker(name).unlink()
        return "ok", {"version": str(current)}, ""
    if archived:
        raise MarkFailure("archived", f"/{name} is archived; publish an empty body to restore it")
    if len(body.encode("utf-8")) > MAX_DOCUMENT:
        raise MarkFailure("too-large", f"documents are limited to {MAX_DOCUMENT} bytes")
    if body == old_body:
        return "ok", {"version": str(current), "modified": store.modified(name, current)}, ""
    store.create(name, current + 1, body, old.data if old else None, publisher)
    return "created", {"version": str(current + 1), "modified": store.modified(name, current + 1)}, ""


def _archive(store: Store, name: str):
    current = store.current(name)
    if not current:
        raise MarkFailure("not-found", f"/{name} not found")
    store.archive_marker(name).touch()
    return "ok", {"version": str(current), "archived": "true"}, ""


@dataclass
class _History:
    """A document's versions as VERSIONS reports them: when each was made, and how far
    the hash chain holds (each version's previous-hash is the one before's file)."""
    modified: List[str] = field(default_factory=list)
    valid_up_to: int = 0
    last: Optional[str] = None  # the hash of the newest version file read: the next one's previous-hash


class _Stored(NamedTuple):
    """A version file: its bytes, its header, its body."""

    data: bytes
    header: Dict[str, str]
    body: str

    @property
    def publisher(self) -> Dict[str, str]:
        """The metadata its writer sent (agent: mcp), which FETCH gives back."""
        return {key: value for key, value in self.header.items() if key not in ("version", "previous-hash")}


# Request metadata that steers a request and is never stored; and what only the server may say.
_CONTROL_KEYS = ("auth", "expected-version", "if-none-match", "if-modified-since")
_RESERVED_KEYS = ("status", "version", "modified", "etag", "content-hash", "previous-hash", "current-version",
                  "server-version", "your-version", "archived", "total", "current", "chain-valid", "entries")


def _publisher_metadata(metadata: Dict[str, str]) -> Dict[str, str]:
    """The metadata a writer sent to be kept with the version, as the real server keeps it."""
    kept = {key: value for key, value in metadata.items() if key not in _CONTROL_KEYS}
    for key in kept:
        if key in _RESERVED_KEYS:
            raise MarkFailure("bad-request", f'metadata key "{key}" is reserved')
    return kept


_VERSION_PATH = re.compile(r"(.+)/v([0-9]{1,18})")  # FETCH /doc.md/v3: version 3 of /doc.md
_RESERVED_SEGMENT = re.compile(r"\..*|.*\.v[0-9]+|.*\.archived|v[0-9]+")


def _conflict(verb: str, expected: int, current: int) -> MarkFailure:
    """The real server's answer to a write whose expected version is not the current one."""
    if expected == 0:
        text = (f"A document already exists at this path (version {current}).\n\n"
                "Fetch the current version and publish with the correct expected-version to update it.\n")
    else:
        advice = ("Fetch the latest version and verify whether your append was applied before retrying."
                  if verb == "APPEND" else "Please fetch the latest version and reapply your edits.")
        text = (f"The document has been modified since you last fetched it.\n\n"
                f"Your version: {expected}\nServer version: {current}\n\n{advice}\n")
    return MarkFailure("conflict", f"version {current}, not {expected}", "# Version Conflict\n\n" + text,
                       **{"your-version": str(expected), "server-version": str(current)})


_MARKDOWN_SPECIAL = re.compile(r"([\\\[\]()*_`~#|])")


def _escape(text: str) -> str:
    """A name as literal markdown text, as the real server writes it in an index."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _link(path: str) -> str:
    """A path as a link target, as Go's url.PathEscape writes it ("/" too is escaped)."""
    return quote(path, safe="$&+:=@")


def _shown(path: str) -> str:
    """A path as it may appear in an answer: cut short."""
    return path if len(path) <= 200 else path[:200] + "..."


_TEMPORARY_LINK = re.compile(r"\..+\.[0-9a-f]{32}")  # the name a new link has before its swap


def _write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written: a short write is not a write."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError("write wrote nothing")
        view = view[written:]


def _fsync_directory(directory: Path) -> None:
    if not hasattr(os, "O_DIRECTORY"):  # Windows: no directory handles to sync
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_directories(directory: Path) -> None:
    """mkdir -p, syncing each new directory's parent: new entries must survive a power cut too."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for new in reversed(missing):
        try:
            new.mkdir()
        except FileExistsError:
            pass
        _fsync_directory(new.parent)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


def _is_digits(text: str) -> bool:
    """ASCII digits only: "²" and "١" are digits to str.isdigit, not to Mark."""
    return bool(text) and text.isascii() and text.isdigit()


def parse_version(value: Optional[str], required: bool) -> Optional[int]:
    if value is None:
        if required:
            raise MarkFailure("bad-request", "expected-version is required")
        return None
    if not _is_digits(value) or len(value) > 18 or (required and int(value) < 1):
        raise MarkFailure("bad-request", f"invalid expected-version {value[:40]!r}")
    return int(value)


# ------------------------------------------------------------------- auth

class Grant(NamedTuple):
    label: str
    patterns: Tuple[str, ...]
    operations: frozenset  # of "publish" (every write verb) and "read"
    expires: Optional[datetime.datetime]


class Grants:
    """Capability tokens by SHA-256 hash: which operations on which paths each may do.

    Writes need a token with `publish` on the path.  Reads are public, but
    for paths some grant gives `read` on: those need a token that has it.
    """

    def __init__(self, grants: Dict[str, Grant]):
        self.grants = grants

    def check(self, token: Optional[str], verb: str, path: str) -> None:
        operation = "publish" if verb in WRITES else "read"
        if operation == "read" and not any(
                "read" in grant.operations and _covers(grant, path) for grant in self.grants.values()):
            return  # a public path
        if operation == "publish" and not self.grants:
            raise MarkFailure("not-permitted", "this server has no tokens: writes are disabled")
        grant = self.grants.get(_hash(token)) if token else None
        if grant is None or (grant.expires is not None and grant.expires <= _now()):
            raise MarkFailure("unauthorized", "authentication required")
        if operation not in grant.operations or not _covers(grant, path):
            raise MarkFailure("not-permitted", "insufficient permissions")


def load_grants(token: Optional[str], tokens_file=None) -> Grants:
    """The dev token (publish everywhere) and a Demarkus TOML token file; ValueError if malformed.

        [tokens.ci]
        hash = "sha256-<hex of sha256(token)>"
        paths = ["/docs/**", "/notes/*.md"]
        operations = ["publish", "read"]
        expires = 2027-01-01T00:00:00Z     # optional, RFC 3339
    """
    grants: Dict[str, Grant] = {}
    if tokens_file:
        import tomllib  # Python 3.11+; imported here so the server runs on 3.9 without a token file

        with open(tokens_file, "rb") as file:
            tables = tomllib.load(file).get("tokens", {})
        for label, table in tables.items():
            grant = _grant(label, table)
            digest = table["hash"]
            if digest in grants:
                raise ValueError(f"tokens {grants[digest].label!r} and {label!r} have the same hash")
            grants[digest] = grant
    if token and not token.strip():
        raise ValueError("the dev token is blank")
    if token:
        grants[_hash(token)] = Grant("dev", ("/**",), frozenset({"publish"}), None)
    return Grants(grants)


def _grant(label: str, table) -> Grant:
    where = f"token {label!r}"
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table")
    digest, paths, operations = table.get("hash"), table.get("paths"), table.get("operations")
    if not isinstance(digest, str) or not re.fullmatch(r"sha256-[0-9a-f]{64}", digest):
        raise ValueError(f"{where}: hash must be \"sha256-<64 hex digits>\"")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p.startswith("/") for p in paths):
        raise ValueError(f"{where}: paths must be a list of paths starting with /")
    for pattern in paths:
        if pattern.count("**") > 1 or ("**" in pattern and not re.search(r"/\*\*(/|$)", pattern)):
            raise ValueError(f"{where}: {pattern!r} may hold one ** only, as a whole path segment")
    if not isinstance(operations, list) or not operations or not set(operations) <= {"publish", "read"}:
        raise ValueError(f"{where}: operations must be a list of \"publish\" and \"read\"")
    expires = table.get("expires")
    if expires is not None:
        try:
            if isinstance(expires, str):
                expires = datetime.datetime.fromisoformat(expires.replace("Z", "+00:00"))
            if not isinstance(expires, datetime.datetime) or expires.tzinfo is None:
                raise ValueError
        except ValueError:
            raise ValueError(f"{where}: expires must be an RFC 3339 time with its offset") from None
    return Grant(label, tuple(paths), frozenset(operations), expires)


def _covers(grant: Grant, path: str) -> bool:
    return any(_path_match(pattern, path) for pattern in grant.patterns)


def _path_match(pattern: str, path: str) -> bool:
    """Go's path.Match (a * never crosses a /), plus PREFIX/** and PREFIX/**/SUFFIX."""
    segments = path.split("/")
    if "**" not in pattern:
        wanted = pattern.split("/")
        return len(wanted) == len(segments) and all(map(_segment_match, wanted, segments))
    prefix, _, suffix = pattern.partition("/**")
    head, tail = prefix.split("/"), [s for s in suffix.split("/") if s]
    if len(segments) < len(head) + max(len(tail), 1):  # at least one segment under PREFIX
        return False
    return (all(map(_segment_match, head, segments))
            and all(map(_segment_match, tail, segments[len(segments) - len(tail):])))


def _segment_match(pattern: str, segment: str) -> bool:
    return fnmatch.fnmatchcase(segment, pattern.replace("[^", "[!"))


def _hash(token: str) -> str:
    return _sha256(token.encode("utf-8", "surrogatepass"))


def _sha256(data: bytes) -> str:
    """The hash form Mark writes everywhere: "sha256-<hex>"."""
    return "sha256-" + hashlib.sha256(data).hexdigest()


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


# ------------------------------------------------------------- messages

def read_request(text: str) -> Tuple[Dict[str, str], str]:
    """Split a Mark request into (metadata, body); bad-request when malformed.

    The size of the block is checked before a byte of it is parsed, and
    parsing is linear in its length.
    """
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 3)
    if end > MAX_METADATA or (end < 0 and len(text) > MAX_METADATA):
        raise MarkFailure("too-large", "metadata is limited to 64 KiB")
    try:
        return read_frontmatter(text)
    except ValueError:  # its text quotes the line, which may hold a token: never echoed
        raise MarkFailure("bad-request",
                          "malformed metadata: each line is key: value, the value plain or quoted") from None


def write_message(metadata: Dict[str, str], body: str) -> str:
    """Frontmatter (sorted keys, double-quoted values) followed by the body."""
    return write_frontmatter(metadata) + body


# ---- frontmatter codec: this block is the same, byte for byte, in mark_client.py
# ---- and mark_server.py (each file stays standalone); test_codec.py checks it.

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+/=~-]*\Z")  # no YAML indicator, space or colon
# What YAML reads as a number, a bool (YAML 1.1's too), null or a date, not a string.
_NOT_A_STRING = re.compile(
    r"(?:[-+]?(?:0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)"
    r"|[yYnN]|[Yy]es|YES|[Nn]o|NO|[Tt]rue|TRUE|[Ff]alse|FALSE|[Oo]n|ON|[Oo]ff|OFF|[Nn]ull|NULL"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt].*)?)\Z")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
    "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def write_frontmatter(metadata: Dict[str, str]) -> str:
    """A Mark frontmatter block, keys sorted, values written as Go's yaml.v3 writes them."""
    lines = []
    for key in sorted(metadata):
        value = metadata[key]
        if not isinstance(key, str) or not _PLAIN_KEY.match(key):
            raise ValueError(f"metadata key {key!r} must be letters, digits, '_', '-' or '.'")
        if not isinstance(value, str):
            raise TypeError(f"metadata value for {key!r} must be str, not {type(value).__name__}")
        lines.append(f"{key}: {write_scalar(value)}\n")
    return "---\n" + ("".join(lines) or "\n") + "---\n"


def write_scalar(value: str) -> str:
    """`value` as a YAML scalar that Go's yaml.v3 reads back exactly, in yaml.v3's style.

    Plain where nothing in it could mean anything but a string (a token,
    a hex etag, "ok"); otherwise double-quoted: "3", "2026-12-03T10:41:15Z",
    "true", "a: b".  So a request reads byte for byte as the real client's.
    """
    if _PLAIN_VALUE.match(value) and not _NOT_A_STRING.match(value):
        return value
    out = []
    for char in value:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\x{code:02x}")
        elif char in "\ufeff\ufffe\uffff" or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        elif code > 0xFFFF:
            out.append(f"\\U{code:08x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def read_frontmatter(text: str):
    """Split a Mark message into (metadata, body); ValueError when malformed.

    The block starts with "---\\n" at byte 0 and ends at the first
    "\\n---\\n"; the body after it is returned byte for byte.
    """
    if not text.startswith("---\n"):
        raise ValueError("no frontmatter")
    end = text.find("\n---\n", 3)
    if end < 0:
        raise ValueError("frontmatter is not closed")
    metadata = {}
    for line in text[4:end].split("\n"):
        if not line.strip():
            continue
        if line[0] in " \t":
            raise ValueError(f"nested or indented YAML is not Mark frontmatter: {line!r}")
        key, rest = _read_scalar(line, key=True)
        if not rest.startswith(":") or rest[1:2] not in ("", " "):
            raise ValueError(f"not a 'key: value' line: {line!r}")
        value, rest = _read_scalar(rest[1:].strip(" "), key=False)
        if rest.strip(" ") and not rest.strip(" ").startswith("#"):
            raise ValueError(f"trailing text after value: {line!r}")
        metadata[key] = value
    return metadata, text[end + 5:]


def _read_scalar(text: str, key: bool):
    """Read a plain, single- or double-quoted scalar; return (value, the rest)."""
    if text.startswith("'"):
        match = re.match(r"'((?:[^']|'')*)'", text)
        if not match:
            raise ValueError(f"unterminated single-quoted scalar: {text!r}")
        return match.group(1).replace("''", "'"), text[match.end():]
    if text.startswith('"'):
        return _read_double_quoted(text)
    if key:
        end = text.find(":")
        value, rest = (text, "") if end < 0 else (text[:end], text[end:])
    else:
        comment = text.find(" #")
        value, rest = (text, "") if comment < 0 else (text[:comment], text[comment:])
    value = value.strip(" ")
    if (key and not value) or value[:1] in ("|", ">", "[", "{", "&", "*", "!", "%", "@", "`"):
        raise ValueError(f"unsupported YAML scalar: {text!r}")
    return value, rest


def _read_double_quoted(text: str):
    out, i = [], 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(out), text[i + 1:]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        escape = text[i + 1:i + 2]
        if escape in _UNESCAPES:
            out.append(_UNESCAPES[escape])
            i += 2
        elif escape in _HEX_ESCAPES:
            digits = text[i + 2:i + 2 + _HEX_ESCAPES[escape]]
            if len(digits) != _HEX_ESCAPES[escape] or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"bad \\{escape} escape in {text!r}")
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                raise ValueError(f"\\{escape}{digits} is not a character")
            out.append(chr(code))
            i += 2 + len(digits)
        else:
            raise ValueError(f"unknown escape \\{escape} in {text!r}")
    raise ValueError(f"unterminated double-quoted scalar: {text!r}")


# ---- end of frontmatter codec


# -------------------------------------------------------------------- CLI

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="mark-server",
                                     description="Reference Mark server over HTTP, and QUIC with --quic "
                                                 "(token: $MARK_TOKEN).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--root", required=True, help="store directory (created if missing)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6309)
    parser.add_argument("--tokens", help="Demarkus TOML token file")
    parser.add_argument("--quic", action="store_true", help="serve Mark over QUIC too (mark://; needs aioquic)")
    parser.add_argument("--quic-port", type=int, help="UDP port for QUIC (default: --port)")
    parser.add_argument("--tls-cert", help="PEM certificate for QUIC (default: a development one made now)")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    parser.add_argument("--rate-limit", type=float, metavar="N",
                        help="requests a second per client address, 0: off "
                             "(default: $DEMARKUS_RATE_LIMIT, else 50)")
    parser.add_argument("--rate-burst", type=int, metavar="N",
                        help="requests a client may send at once above the rate "
                             "(default: $DEMARKUS_RATE_BURST, else 100)")
    args = parser.parse_args(argv)
    if bool(args.tls_cert) != bool(args.tls_key):
        parser.error("--tls-cert and --tls-key go together")
    try:
        server = MarkServer(args.root, args.host, args.port, os.environ.get("MARK_TOKEN"), args.tokens,
                            rate_limit=args.rate_limit, rate_burst=args.rate_burst)
        if args.quic:
            server.listen_quic(args.quic_port, args.tls_cert, args.tls_key)
    except (OSError, ImportError, ValueError) as error:
        print(f"mark-server: {error}", file=sys.stderr)
        return 2
    print(f"mark-server: serving {Path(args.root).resolve()} at {server.url}", file=sys.stderr)
    if server.mark_url:
        made = "" if args.tls_cert else "development "
        print(f"mark-server: and at {server.mark_url}, {made}certificate SHA-256 "
              f"{fingerprint(server.certificate_pem)}", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
