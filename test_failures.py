"""mark_client.py's table of failures, cell by cell, against a small Mark server on a loopback socket.

The server holds one document, /p, at version 1.  The request under test
(a read: FETCH /p/v1; a write with E: PUBLISH /p at expected-version 1; a
write without: PUBLISH /p with none) meets the row's failure every time
it is sent; the look-up's requests (VERSIONS, FETCH /p/vN) are answered
truly.  A write either is stored before its answer fails ("stored") or
is not ("not stored"), so each write-with-E cell is played both ways.
Each case asserts how often the request was sent, whether it was looked
up, and what the caller got.
"""

import hashlib
import re
import socket
import struct
import threading

import pytest

import mark_client as mc
from mark_client import MarkClient, MarkError

TOKEN = "table-test-token"
WRITE = "two\n"

# The table, as mark_client's docstring has it.  Each cell: (sends, looked up, outcome), the
# outcome a Mark status returned, or "error" (MarkError transport, may_have_landed False),
# "landed?" (MarkError transport, may_have_landed True) or "refused" (MarkError refused).
# With REFUSED_TRIES = 2, "again" is two sends.  The write-with-E cell has two: stored, not stored.
# Each failure is played as the table's row named before it (mark_client._ACTIONS's row).
TABLE = {
    #  row/failure                 read                      write with E: stored, not stored               write without E
    "unsent/could not connect": ((0, False, "error"), (0, False, "error"), (0, False, "error"),              (0, False, "error")),
    "refused/refused":       ((2, False, "refused"),   (2, False, "refused"), (2, False, "refused"),             (2, False, "refused")),
    "closed/closed":         ((2, False, "error"),     (1, True, "created"),  (2, True, "landed?"),              (1, False, "landed?")),
    "closed/reset in head":  ((2, False, "error"),     (1, True, "created"),  (2, True, "landed?"),              (1, False, "landed?")),
    "lost/reset":            ((1, False, "error"),     (1, True, "created"),  (1, True, "landed?"),              (1, False, "landed?")),
    "lost/timeout":          ((1, False, "error"),     (1, True, "created"),  (1, True, "landed?"),              (1, False, "landed?")),
    "lost/short body":       ((1, False, "error"),     (1, True, "created"),  (1, True, "landed?"),              (1, False, "landed?")),
    "lost/oversized":        ((1, False, "error"),     (1, True, "created"),  (1, True, "landed?"),              (1, False, "landed?")),
    "lost/hash mismatch":    ((1, False, "error"),     (1, True, "created"),  (1, True, "landed?"),              (1, False, "landed?")),
    "lost/not HTTP 200":     ((1, False, "error"),     (1, True, "created"),  (1, True, "landed?"),              (1, False, "landed?")),
    "lost/not Mark":         ((1, False, "error"),     (1, True, "created"),  (1, True, "landed?"),              (1, False, "landed?")),
    "server-error/server-error": ((1, False, "server-error"), (1, True, "created"), (1, True, "server-error"),    (1, False, "server-error")),
    "conflict/conflict":     ((1, False, "conflict"),  None,                  (1, False, "conflict"),            (1, False, "conflict")),
    "wrong version/created as 9": (None,               (1, False, "landed?"), (1, False, "landed?"),             None),
    "answer/created as 9":   (None,                    None,                  None,                              (1, False, "created")),
    "answer/answered":       ((1, False, "ok"),        (1, False, "created"), None,                              (1, False, "created")),
}


def answer(body: str = "", **metadata) -> bytes:
    """A Mark answer, as HTTP 200 with its length."""
    payload = (mc.write_frontmatter({key.replace("_", "-"): str(value) for key, value in metadata.items()})
               + body).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: text/markdown\r\nConnection: close\r\n"
            b"Content-Length: %d\r\n\r\n" % len(payload)) + payload


def failing(row: str, conn, truly: bytes) -> None:
    """Send `row`'s failure on `conn` instead of the true answer, `truly`."""
    head, _, body = truly.partition(b"\r\n\r\n")
    if row in ("refused", "refused, for a minute"):
        after = b"60" if row == "refused, for a minute" else b"0"
        conn.sendall(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: %s\r\nContent-Length: 0\r\n\r\n" % after)
    elif row == "closed":
        pass  # closed without a byte
    elif row == "reset in head":
        conn.sendall(head[:len(head) // 2])  # half the headers, then RST
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    elif row == "reset":
        conn.sendall(truly[:len(head) + 4 + len(body) // 2])
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
    elif row == "timeout":
        conn.sendall(truly[:len(head) + 4 + len(body) // 2])
        conn.settimeout(10)  # the rest never comes: wait until the client gives up and closes
        conn.recv(1)
    elif row == "short body":
        conn.sendall(truly[:len(head) + 4 + len(body) // 2])
    elif row == "oversized":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (mc.MAX_RESPONSE_BYTES + 1))
    elif row == "hash mismatch":
        conn.sendall(answer("x\n", status="ok", version=1, content_hash="sha256-" + hashlib.sha256(b"y\n").hexdigest()))
    elif row == "not HTTP 200":
        conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\noops\n")
    elif row == "not Mark":
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 19\r\n\r\n<html>hello</html>\n")
    elif row == "server-error":
        conn.sendall(answer("\n# Server error\n", status="server-error"))
    elif row == "created as 9":
        conn.sendall(answer(status="created", version=9))
    elif row == "conflict":
        conn.sendall(answer(status="conflict", server_version=2, your_version=1))
    elif row == "answered":
        conn.sendall(truly)


class Server:
    """/p on 127.0.0.1, a thread per connection, one request each; the request under test fails as `row`
    says, or its n-th send as `rows[n]` (the last again after them).  The first `look_fails` VERSIONS
    are answered `server-error`, so that a look-up cannot tell; "closed, then gone" closes the
    listener too, so that nothing after it can connect."""

    def __init__(self, row, stores: bool, look_fails: int = 0):
        self.rows, self.stores, self.look_fails = [row] if isinstance(row, str) else row, stores, look_fails
        self.row = self.rows[0]
        self.versions = ["one\n"]
        self.requests = []  # (verb, path)
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        if row == "could not connect":
            self.listener.close()  # nobody listens there: nothing reaches this server
        else:
            threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536) or b"\r\n\r\n"
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                body += conn.recv(65536)
            verb, path = head.split(b" ")[:2]
            verb, path = verb.decode(), path.decode()
            metadata, text = mc.read_frontmatter(body.decode()) if body else ({}, "")
            with self.lock:
                under_test = verb in ("PUBLISH", "APPEND") or (verb, path) == ("FETCH", "/p/v1")
                row = self.rows[min(self.requests.count((verb, path)), len(self.rows) - 1)] if under_test else ""
                self.requests.append((verb, path))
                stores = not under_test or (self.stores and not row.startswith("refused"))  # a refusal is not handled
                truly = self.handle(verb, path, metadata, text, stores)
                if verb == "VERSIONS" and self.requests.count(("VERSIONS", path)) <= self.look_fails:
                    truly = answer("\n# Server error\n", status="server-error")
            try:
                if row == "closed, then gone":
                    self.listener.close()
                elif under_test:
                    failing(row, conn, truly)
                else:
                    conn.sendall(truly)
            except OSError:
                pass  # the client left first

    def handle(self, verb, path, metadata, text, stores):
        if verb == "VERSIONS":
            return answer(status="ok", current=len(self.versions), total=len(self.versions))
        if verb == "FETCH":
            n = int(path.rsplit("/v", 1)[1])
            if not 1 <= n <= len(self.versions):
                return answer("\n# Not found\n", status="not-found")
            return answer(self.versions[n - 1], status="ok", version=n)
        expected = metadata.get("expected-version")
        if expected is not None and int(expected) != len(self.versions):
            return answer(status="conflict", server_version=len(self.versions), your_version=expected)
        if stores:
            self.versions.append(self.versions[-1] + text if verb == "APPEND" else text)
        return answer(status="created", version=len(self.versions))

    def sends(self, request):
        return self.requests.count(request)

    def close(self):
        self.listener.close()


COLUMNS = (("read", False), ("write with E", True), ("write with E", False), ("write without E", True))
CELLS = [(name, column, stores) for name in TABLE for (column, stores), cell in zip(COLUMNS, TABLE[name])
         if cell is not None]


@pytest.mark.parametrize("name,column,stores", CELLS,
                         ids=[f"{name}-{column}-{'stored' if stores else 'not stored'}" for name, column, stores in CELLS])
def test_each_cell_of_the_table(name, column, stores, monkeypatch):
    monkeypatch.setattr(mc, "REFUSED_TRIES", 2)
    sends, looked_up, outcome = TABLE[name][COLUMNS.index((column, stores))]
    row = name.partition("/")[2]
    server = Server(row, stores)
    try:
        with MarkClient(server.url, token=TOKEN, timeout=0.5 if row == "timeout" else 5) as client:
            call = {"read": lambda: client.fetch("/p", version=1),
                    "write with E": lambda: client.publish("/p", WRITE, expected_version=1),
                    "write without E": lambda: client.publish("/p", WRITE)}[column]
            try:
                got = call().status
            except MarkError as error:
                assert TOKEN not in str(error)
                got = {("transport", False): "error", ("transport", True): "landed?",
                       ("refused", False): "refused"}[error.status, error.may_have_landed]
    finally:
        server.close()
    under_test = ("FETCH", "/p/v1") if column == "read" else ("PUBLISH", "/p")
    assert (server.sends(under_test), server.sends(("VERSIONS", "/p")) > 0, got) == (sends, looked_up, outcome)


def test_the_docstrings_table_is_the_code_and_each_cell_is_played_here():
    table = mc.__doc__[mc.__doc__.index("\n    row: what came back"):mc.__doc__.index("\n\n- again")]
    cells = {}
    for line in table.split("\n"):
        if re.match(r"    [a-z-]+( [a-z]+)?: ", line) and not line.startswith("    row: "):
            row, _, rest = line.strip().partition(": ")
            actions = re.split(r"\s{2,}", rest)[1:]
            cells.update({(row, column): action for column, action in zip(("read", "write with E", "write without E"),
                                                                            actions) if action != "-"})
    code = {cell: f"{action.look}, else {action.then}" if action.look else action.then
            for cell, action in mc._ACTIONS.items()}  # the one private name here: the table the docstring shows
    assert cells == code and len(cells) == 22
    played = {(name.partition("/")[0], column) for name, column, _ in CELLS}
    assert set(cells) <= played


def test_a_write_given_up_on_says_the_look_up_found_nothing_and_no_time_was_left(monkeypatch):
    monkeypatch.setattr(mc, "_backoff", lambda tries: 60.0)  # the pause would end past the deadline
    server = Server("closed", False)
    try:
        with MarkClient(server.url, token=TOKEN, timeout=5) as client, pytest.raises(MarkError) as caught:
            client.publish("/p", WRITE, expected_version=1)
    finally:
        server.close()
    assert caught.value.may_have_landed and server.sends(("PUBLISH", "/p")) == 1
    assert "1 send in all (no time left for another within 5 s); a look-up did not find the write" in str(caught.value)


# ---- once a copy of a write went out (issue 42, point 1): its first send closes unanswered after
# storing it, and the look-up cannot tell (its VERSIONS answered server-error, or nothing listens).

WRITES = {"publish": lambda client: client.publish("/p", WRITE, expected_version=1),
          "append": lambda client: client.append("/p", WRITE, expected_version=1)}


@pytest.mark.parametrize("call", WRITES)
@pytest.mark.parametrize("then,status,sends", [
    ("refused", "refused", 3),                   # refused until REFUSED_TRIES
    ("refused, for a minute", "refused", 2),     # refused, and no time left for the pause it asks
    ("closed, then gone", "transport", 1),       # nothing listens any more: the resend cannot connect
])
def test_once_a_copy_went_out_no_error_says_the_write_did_not_land(call, then, status, sends, monkeypatch):
    monkeypatch.setattr(mc, "REFUSED_TRIES", 3)
    server = Server(["closed" if then != "closed, then gone" else then, then], stores=True, look_fails=1)
    try:
        with MarkClient(server.url, token=TOKEN, timeout=5) as client, pytest.raises(MarkError) as caught:
            WRITES[call](client)
    finally:
        server.close()
    assert (caught.value.status, caught.value.may_have_landed) == (status, True)
    assert "an earlier copy of the write went out and may have landed: fetch /p before retrying" in str(caught.value)
    assert len(server.versions) == 2 and server.sends((call.upper(), "/p")) == sends
    assert ("no time left" in str(caught.value)) == (then == "refused, for a minute")
    assert "a look-up could not tell whether it landed" in str(caught.value)  # the first look-up's, kept


@pytest.mark.parametrize("call", WRITES)
def test_a_resend_answered_conflict_because_the_first_copy_landed_is_found_as_the_write(call):
    server = Server(["closed", "answered"], stores=True, look_fails=1)  # the resend: conflict, v2 is ours
    try:
        with MarkClient(server.url, token=TOKEN, timeout=5) as client:
            got = WRITES[call](client)
    finally:
        server.close()
    assert (got.status, got.metadata["version"], got.metadata["looked-up"]) == ("created", "2", "true")
    assert server.sends((call.upper(), "/p")) == 2 and server.sends(("VERSIONS", "/p")) == 2


def test_a_first_conflict_is_not_looked_up():
    server = Server("conflict", stores=False)
    try:
        with MarkClient(server.url, token=TOKEN, timeout=5) as client:
            assert client.publish("/p", WRITE, expected_version=1).status == "conflict"
    finally:
        server.close()
    assert server.sends(("VERSIONS", "/p")) == 0


@pytest.mark.parametrize("call", WRITES)
def test_a_server_error_the_look_up_cannot_explain_is_not_handed_back(call):
    server = Server("server-error", stores=True, look_fails=1)
    try:
        with MarkClient(server.url, token=TOKEN, timeout=5) as client, pytest.raises(MarkError) as caught:
            WRITES[call](client)
    finally:
        server.close()
    assert (caught.value.status, caught.value.may_have_landed) == ("transport", True)
    assert "a look-up could not tell whether it landed" in str(caught.value)
