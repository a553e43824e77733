"""Mark over QUIC: the mark:// transport of mark_client.py, as the real Demarkus servers speak it.

    MarkClient("mark://docs.example.com")     # mark_client.py imports this file for mark:// URLs only

QUIC v1, TLS 1.3 and ALPN "mark"; one connection per client, a stream per
request (see `QuicLink`).  Needs aioquic (`pip install 'mark-publish[quic]'`);
vendor it beside mark_client.py, which gives http(s):// alone.
"""

import asyncio
import concurrent.futures
import contextlib
import ssl
import threading
from typing import Optional, Union

from aioquic.asyncio import QuicConnectionProtocol, connect
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamDataReceived

from mark_client import MarkError

__version__ = "0.3.0"  # the release this file is from; vendored copies keep saying it
__all__ = ["QuicLink"]


class QuicLink:
    """One QUIC connection to a Mark server (ALPN "mark"), for blocking code.

    aioquic is asyncio-only, so the link runs an event loop on a daemon
    thread; each exchange is a coroutine there that the caller waits for,
    by its deadline.  Every request gets a bidirectional stream of the one
    connection: the request written and the stream's side ended, then the
    answer read until the server ends it.  A connection found closed (idle
    timeout, server restart) is replaced before a request goes out; one
    that closes under a read is replaced, and the read sent once more.
    """

    def __init__(self, host: str, port: int, verify: Union[bool, str]):
        class Protocol(QuicConnectionProtocol):
            """Notes which streams the server ended, and why the connection closed."""

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.ended: set = set()
                self.closed_because: Optional[str] = None

            def quic_event_received(self, event) -> None:
                if isinstance(event, StreamDataReceived) and event.end_stream:
                    self.ended.add(event.stream_id)
                elif isinstance(event, ConnectionTerminated):
                    self.closed_because = event.reason_phrase or f"error {event.error_code}"
                super().quic_event_received(event)

        self._address = (host, port)
        self._connect, self._protocol_class = connect, Protocol
        self._configuration = QuicConfiguration(is_client=True, alpn_protocols=["mark"], server_name=host)
        if verify is False:
            self._configuration.verify_mode = ssl.CERT_NONE
        elif verify is True:
            system = ssl.get_default_verify_paths()  # else aioquic's own bundle (certifi)
            if system.cafile or system.capath:
                self._configuration.load_verify_locations(cafile=system.cafile, capath=system.capath)
        else:
            self._configuration.load_verify_locations(cafile=verify)
        self._protocol = self._stack = None  # the connection, and what closes it
        self._closing: set = set()  # connections being closed, for close() to wait on
        self._loop = asyncio.new_event_loop()
        self._stopped = False
        threading.Thread(target=self._run, name="mark-quic", daemon=True).start()

    def _run(self) -> None:
        self._loop.run_forever()
        self._loop.close()

    def exchange(self, request: bytes, doing: str, timeout: float, retry: bool, limit: int) -> bytes:
        """The whole answer to `request`, by `timeout`, at most `limit` bytes; `retry`: safe to send twice.

        An empty answer (the stream ended without a byte) is a refusal: the request
        was not handled.
        """
        if self._stopped:
            raise MarkError("transport", f"{doing}: this client is closed")
        sent: list = []
        future = asyncio.run_coroutine_threadsafe(self._exchange(request, doing, retry, limit, sent), self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            self._loop.call_soon_threadsafe(self._drop)  # the next request starts on a new connection
            raise MarkError("transport", f"{doing}: no whole answer within the timeout",
                            may_have_landed=bool(sent)) from None

    async def _exchange(self, request: bytes, doing: str, retry: bool, limit: int, sent: list) -> bytes:
        while True:
            protocol = await self._connected(doing)
            reader, writer = await protocol.create_stream()
            writer.write(request)
            writer.write_eof()
            sent.append(True)
            chunks, size = [], 0
            while chunk := await reader.read(1 << 16):
                size += len(chunk)
                if size > limit:
                    raise MarkError("transport", f"{doing}: the answer is larger than {limit} bytes",
                                    may_have_landed=True)
                chunks.append(chunk)
            stream = writer.get_extra_info("stream_id")
            protocol._stream_readers.pop(stream, None)  # aioquic keeps every stream's reader otherwise
            if stream in protocol.ended:
                protocol.ended.discard(stream)
                if not chunks:
                    # Refused unread (the real server's rate limit), and the real
                    # server never frees such a stream's slot: a new connection.
                    self._drop()
                return b"".join(chunks)
            # The stream ended because the connection did: the answer is not whole.
            self._drop()
            if not retry:
                raise MarkError("transport", f"{doing}: the connection closed before the whole answer came "
                                             f"({protocol.closed_because})", may_have_landed=True)
            retry = False

    async def _connected(self, doing: str):
        """The open connection, or a new one."""
        if self._protocol is not None and self._protocol.closed_because is None:
            return self._protocol
        self._drop()
        made: list = []
        stack = contextlib.AsyncExitStack()

        def protocol(*args, **kwargs):
            made.append(self._protocol_class(*args, **kwargs))
            return made[0]

        try:
            self._protocol = await stack.enter_async_context(
                self._connect(*self._address, configuration=self._configuration, create_protocol=protocol))
        except ConnectionError:
            why = made[0].closed_because if made else "refused"
            raise MarkError("transport", f"{doing}: the QUIC handshake failed ({why})") from None
        except OSError as error:
            raise MarkError("transport", f"{doing}: cannot reach the server ({error})") from None
        self._stack = stack
        return self._protocol

    def _drop(self) -> None:
        """Close the connection in the background; the next request makes a new one."""
        if self._protocol is not None:
            task = self._loop.create_task(self._stack.aclose())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        self._protocol = None

    def close(self) -> None:
        """Close the connection (waiting a moment for the server to hear of it) and the loop."""
        async def close() -> None:
            self._drop()
            if self._closing:
                await asyncio.wait(self._closing, timeout=1.0)
            # An exchange given up at its deadline may still be winding down: end it here,
            # not half-done once the loop is gone.
            rest = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in rest:
                task.cancel()
            if rest:
                await asyncio.wait(rest, timeout=1.0)

        if self._stopped:
            return
        self._stopped = True
        asyncio.run_coroutine_threadsafe(close(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)  # and the thread then closes it
