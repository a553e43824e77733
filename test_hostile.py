"""mark_client.py against servers that misbehave on purpose: raw sockets on 127.0.0.1.

Each case is a server that answers wrongly (redirects, trickles, floods,
compresses, cuts off, lies about its content-hash) or a relay in front of
the real reference server that swallows an answer after the write landed.
"""

import gzip
import hashlib
import re
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time

import pytest
import requests
import responses
import urllib3

import mark_client as mc
from mark_publish import MarkClient, MarkError, mark_append, mark_publish

TOKEN = "hostile-test-token"


class RawServer:
    """Accepts connections on 127.0.0.1 and hands each to `answer(conn, request)`.

    `request` is the whole HTTP request as bytes; every connection is
    counted, so a test can tell that nobody reached this server.  With
    `tls` (an ssl.SSLContext) it speaks https.
    """

    def __init__(self, answer, tls=None):
        self.answer = answer
        self.connections = 0
        self.requests = []
        self._closing = False
        self._tls = tls
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while True:
            conn, _ = self._listener.accept()
            if self._closing:
                conn.close()
                return
            self.connections += 1
            try:
                with self._tls.wrap_socket(conn, server_side=True) if self._tls else conn as conn:
                    request = read_request(conn)
                    self.requests.append(request)
                    self.answer(conn, request)
            except OSError:
                pass  # the client gave up first, as it should

    def close(self):
        self._closing = True
        socket.create_connection(self._listener.getsockname()).close()  # wakes accept()
        self._thread.join()
        self._listener.close()


def read_request(conn) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def mark_answer(body: str = "", **metadata) -> bytes:
    metadata.setdefault("status", "ok")
    lines = "".join(f'{key}: "{value}"\n' for key, value in sorted(metadata.items()))
    return f"---\n{lines}---\n{body}".encode()


def http(payload: bytes, status: str = "200 OK", headers: str = "", length=None) -> bytes:
    length = len(payload) if length is None else length
    return (f"HTTP/1.1 {status}\r\nContent-Type: text/markdown; charset=utf-8\r\n{headers}"
            f"Content-Length: {length}\r\nConnection: close\r\n\r\n").encode() + payload


@pytest.fixture
def raw():
    servers = []

    def start(answer, tls=None):
        servers.append(RawServer(answer, tls))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


# ------------------------------------------------------------ redirects, proxies

@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_redirects_are_never_followed(raw, code):
    elsewhere = raw(lambda conn, request: conn.sendall(http(mark_answer(version=1))))
    redirecting = raw(lambda conn, request: conn.sendall(
        http(b"", f"{code} Moved", f"Location: {elsewhere.url}/p\r\n")))
    client = MarkClient(redirecting.url, token=TOKEN, timeout=5)
    with pytest.raises(MarkError) as caught:
        mark_publish(client, "/p", "body\n", 0)
    assert caught.value.status == "transport" and f"HTTP {code}" in caught.value.message
    assert elsewhere.connections == 0
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
def test_proxies_are_not_taken_from_the_environment(raw, monkeypatch, variable):
    proxy = raw(lambda conn, request: conn.sendall(http(b"", "502 Bad Gateway")))
    server = raw(lambda conn, request: conn.sendall(http(mark_answer("hello\n", version=1))))
    monkeypatch.setenv(variable, proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    assert MarkClient(server.url, token=TOKEN).fetch("/p").body == "hello\n"
    assert proxy.connections == 0


def test_proxies_given_by_the_caller_are_used(raw):
    proxy = raw(lambda conn, request: conn.sendall(http(mark_answer("via proxy\n", version=1))))
    client = MarkClient("http://127.0.0.1:9", proxies={"http": proxy.url})
    assert client.fetch("/p").body == "via proxy\n"
    assert proxy.requests[0].startswith(b"FETCH http://127.0.0.1:9/p ")


def test_a_socks_proxy_is_refused_before_anything_is_sent(raw):
    server = raw(lambda conn, request: conn.sendall(http(mark_answer("hello\n", version=1))))
    with pytest.raises(ValueError, match="proxies must map a scheme to an http:// or https:// proxy URL"):
        MarkClient(server.url, proxies={"http": "socks5://127.0.0.1:9"})
    session = requests.Session()  # the deadline's reads would not go through a SOCKS proxy's connections
    session.proxies["http"] = "socks5://127.0.0.1:9"
    with pytest.raises(ValueError, match="only http:// and https:// proxies are supported, not socks5://"):
        MarkClient(server.url, session=session).fetch("/p")
    assert server.connections == 0


# ------------------------------------------------------------ deadline and size

@pytest.mark.parametrize("head,drip", [
    (http(b"", length=1000), b"x"),  # the body comes a byte at a time
    (b"HTTP/1.1 200 OK\r\n", b"X-Slow: y\r\n"),  # the headers come a line at a time
], ids=["body", "headers"])
def test_timeout_is_a_deadline_for_a_trickling_answer(raw, head, drip):
    trickled = threading.Event()

    def trickle(conn, request):
        conn.sendall(head)
        for _ in range(40):  # bounded: a drip every 0.25 s, 10 s in all, unless the client leaves
            conn.sendall(drip)
            time.sleep(0.25)
        trickled.set()

    server = raw(trickle)
    client = MarkClient(server.url, timeout=1.0)
    with pytest.raises(MarkError, match="within the timeout"):
        client.fetch("/p")
    assert not trickled.is_set()  # it gave up at its deadline, while the trickle went on


def test_a_server_dripping_its_whole_answer_a_byte_at_a_time_is_cut_off_at_the_deadline(raw):
    # Every byte comes well within the timeout, so only a deadline over all the reads of the
    # answer, status line first, stops the call; without one, the answer comes whole in 15 s.
    answer = http(mark_answer("x" * 200, version=1))
    dripped = []

    def drip(conn, request):
        for byte in answer:
            conn.sendall(bytes([byte]))
            dripped.append(byte)
            time.sleep(0.05)

    server = raw(drip)
    with pytest.raises(MarkError, match="within the timeout"):
        MarkClient(server.url, timeout=1.0).fetch("/p")
    assert len(dripped) < len(answer) // 2  # it left at its deadline, mid-drip


def trickling_headers(conn, request):
    """An answer's status line, then a header line every 0.25 s: never whole, 10 s in all."""
    conn.sendall(b"HTTP/1.1 200 OK\r\n")
    for _ in range(40):
        conn.sendall(b"X-Slow: y\r\n")
        time.sleep(0.25)


def tls_context(tmp_path):
    """A server TLS context with a self-signed certificate made now by openssl (the client is told verify=False)."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a certificate")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", tmp_path / "key.pem", "-out", tmp_path / "cert.pem", "-days", "1", "-subj", "/CN=127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    return context


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")  # verify=False, on purpose
@pytest.mark.parametrize("route", ["https", "proxy", "session"])
def test_the_deadline_holds_over_https_through_a_proxy_and_on_a_session_passed_in(raw, tmp_path, route):
    server = raw(trickling_headers, tls=tls_context(tmp_path) if route == "https" else None)
    if route == "proxy":  # the proxy is the one trickling: it answers for the server behind it
        client = MarkClient("http://127.0.0.1:9", timeout=1.0, proxies={"http": server.url})
    else:
        client = MarkClient(server.url, timeout=1.0, verify=False,
                            session=requests.Session() if route == "session" else None)
    with pytest.raises(MarkError, match="within the timeout"):
        client.fetch("/p")
    assert server.connections == 1 and len(server.requests) == 1


def test_an_exchange_starts_no_thread(raw, monkeypatch):
    server = raw(lambda conn, request: conn.sendall(http(mark_answer("hello\n", version=1))))
    caller, started = threading.current_thread(), []
    start = threading.Thread.start

    def recorded(thread):
        if threading.current_thread() is caller:
            started.append(thread.name)
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", recorded)
    client = MarkClient(server.url, token=TOKEN)
    assert client.request("FETCH", "/p").body == "hello\n"
    assert client.publish("/p", "two\n", 1).status == "ok"
    assert started == [] and len(server.requests) == 2


def test_the_answer_is_read_without_read1(raw, monkeypatch):
    # urllib3 before 2.3 (1.26 included, which requests accepts) has no HTTPResponse.read1.
    monkeypatch.delattr(urllib3.response.HTTPResponse, "read1", raising=False)
    server = raw(lambda conn, request: conn.sendall(http(mark_answer("hello\n", version=1))))
    assert MarkClient(server.url, timeout=2).request("FETCH", "/p").body == "hello\n"


def test_oversized_answer_is_refused_from_its_length(raw):
    server = raw(lambda conn, request: conn.sendall(http(b"", length=mc.MAX_RESPONSE_BYTES + 1)))
    with pytest.raises(MarkError, match="larger than"):
        MarkClient(server.url).fetch("/p")


def test_oversized_answer_without_length_is_refused_while_it_arrives(raw):
    def flood(conn, request):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/markdown\r\nConnection: close\r\n\r\n")
        chunk = b"x" * (1 << 20)
        for _ in range(mc.MAX_RESPONSE_BYTES // len(chunk) + 4):  # bounded: a little past the cap
            conn.sendall(chunk)

    server = raw(flood)
    with pytest.raises(MarkError, match="larger than"):
        MarkClient(server.url).fetch("/p")


def test_compressed_answer_is_refused(raw):
    bomb = gzip.compress(b"x" * (50 << 20))  # 50 MiB that would unpack from about 50 KiB
    server = raw(lambda conn, request: conn.sendall(http(bomb, headers="Content-Encoding: gzip\r\n")))
    with pytest.raises(MarkError, match="compressed"):
        MarkClient(server.url).fetch("/p")
    assert b"accept-encoding: identity" in server.requests[0].lower()


# ------------------------------------------------------------ bodies that lie

def test_cut_off_fetch_is_never_merged_or_published(raw):
    full = mark_answer("".join(f"line {n}\n" for n in range(100)), version=2)

    def answer(conn, request):
        if request.startswith(b"PUBLISH"):
            conn.sendall(http(mark_answer(status="conflict", **{"server-version": 2, "your-version": 1})))
        elif request.startswith(b"FETCH /p/v1"):
            conn.sendall(http(mark_answer("line 0\n", version=1)))
        else:  # the latest version, announced whole but sent in part
            conn.sendall(http(full[:len(full) // 2], length=len(full)))

    server = raw(answer)
    with pytest.raises(MarkError, match=re.escape("the answer was cut off (reset, or shorter than its "
                                                  "Content-Length)")):  # one wording, urllib3 1.26 and 2.x
        mark_publish(MarkClient(server.url, token=TOKEN), "/p", "line 0\nmine\n", 1, on_conflict="merge")
    assert [r.split(b" ")[0] for r in server.requests].count(b"PUBLISH") == 1


def test_content_hash_is_verified(raw):
    body = "# Hello\n"
    good = "sha256-" + hashlib.sha256(body.encode()).hexdigest()
    answers = iter([mark_answer(body, version=1, **{"content-hash": good}),
                    mark_answer(body + "tampered\n", version=1, **{"content-hash": good})])
    server = raw(lambda conn, request: conn.sendall(http(next(answers))))
    client = MarkClient(server.url)
    assert client.request("FETCH", "/p").body == body
    with pytest.raises(MarkError, match="content-hash"):
        client.request("FETCH", "/p")


@pytest.mark.parametrize("version", [" 7", "+7", "1_0", "-1", "٣", "²", "7 ", ""])
def test_only_ascii_digits_are_a_version(version):
    with responses.RequestsMock() as mock:
        mock.add("PUBLISH", "http://127.0.0.1:6309/p", body=f'---\nstatus: created\nversion: "{version}"\n---\n',
                 auto_calculate_content_length=True)
        with pytest.raises(MarkError, match="version"):
            mark_publish(MarkClient("http://127.0.0.1:6309", token=TOKEN), "/p", "x\n", 0)


# ------------------------------------------------------------ lost answers

class Relay:
    """Forwards HTTP requests to `upstream` one connection each, and swallows the
    answers of the requests `drop(request)` picks: the write lands, its answer is lost."""

    def __init__(self, raw, upstream: str, drop, before=lambda request: None):
        host, port = upstream.rsplit("/", 1)[-1].split(":")
        self.address = (host, int(port))
        self.dropped = 0

        def answer(conn, request):
            before(request)
            with socket.create_connection(self.address) as up:
                up.sendall(request.replace(b"keep-alive", b"close"))
                response = b""
                while chunk := up.recv(65536):
                    response += chunk
            if drop(request):
                self.dropped += 1
                return  # close without a byte of the answer
            conn.sendall(response)

        self.url = raw(answer).url  # closed with the other raw servers


def test_publish_whose_answer_is_lost_reports_the_version_it_landed_as(raw, server):
    direct = MarkClient(server.url, token=TOKEN)
    assert direct.publish("/p.md", "one\n", 0).status == "created"
    relay = Relay(raw, server.url, drop=lambda request: request.startswith(b"PUBLISH"))
    result = mark_publish(MarkClient(relay.url, token=TOKEN), "/p.md", "two\n", 1)
    assert (result.status, result.version, relay.dropped) == ("ok", 2, 1)
    # Retrying the same call after its answer was lost: no second version.
    again = mark_publish(MarkClient(server.url, token=TOKEN), "/p.md", "two\n", 1, on_conflict="merge")
    assert (again.status, again.version) == ("ok", 2)
    assert direct.versions("/p.md").metadata["total"] == "2"


def test_append_whose_answer_is_lost_is_not_appended_twice(raw, server):
    direct = MarkClient(server.url, token=TOKEN)
    direct.publish("/log.md", "first\n", 0)
    relay = Relay(raw, server.url, drop=lambda request: request.startswith(b"APPEND"))
    result = mark_append(MarkClient(relay.url, token=TOKEN), "/log.md", "second\n", 1)
    assert (result.status, result.version) == ("ok", 2)
    assert direct.versions("/log.md").metadata["total"] == "2"


def test_lost_answer_of_a_write_that_did_not_land_says_to_fetch(raw, server):
    direct = MarkClient(server.url, token=TOKEN)
    direct.publish("/p.md", "one\n", 0)

    def someone_else_first(request):
        if request.startswith(b"PUBLISH"):
            direct.publish("/p.md", "theirs\n", 1)  # v2 is another writer's before ours arrives

    relay = Relay(raw, server.url, drop=lambda request: request.startswith(b"PUBLISH"), before=someone_else_first)
    with pytest.raises(MarkError, match="may have landed: fetch /p.md before retrying") as caught:
        MarkClient(relay.url, token=TOKEN, timeout=2).publish("/p.md", "mine\n", 1)
    assert TOKEN not in str(caught.value) and caught.value.may_have_landed


def test_refused_connection_is_plain_transport_error():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(MarkError) as caught:
        MarkClient(f"http://127.0.0.1:{port}", token=TOKEN, timeout=2).publish("/p", "x\n", 0)
    assert "may have landed" not in caught.value.message and not caught.value.may_have_landed


def test_blank_token_is_refused():
    with pytest.raises(TypeError, match="token"):
        MarkClient("http://127.0.0.1:6309", token=" ")


def test_a_write_that_cannot_be_looked_for_is_sent_once_when_its_connection_closes_unanswered(raw):
    # With no expected_version nothing can tell whether it landed: sending it again could
    # publish over a writer who came in between, so it goes out once and the error says so.
    silent = raw(lambda conn, request: None)  # reads the request, closes without a byte
    with pytest.raises(MarkError, match="closed without an answer") as caught:
        MarkClient(silent.url, token=TOKEN, timeout=5).publish("/p", "body\n")
    assert caught.value.may_have_landed and len(silent.requests) == 1
    assert silent.requests[0].startswith(b"PUBLISH /p ")


def test_a_read_whose_connection_is_reset_before_any_answer_is_sent_again(raw):
    # What a kept-alive connection the server was closing just as the request went out looks like.
    resets = []

    def reset_first(conn, request):
        if not resets:
            resets.append(request)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
            return
        conn.sendall(http(mark_answer("hi\n", version=1)))

    server = raw(reset_first)
    assert MarkClient(server.url, timeout=5).fetch("/p", version=1).body == "hi\n"
    assert len(server.requests) == 2


# ------------------------------------------------------------ the look-up, the cache, a session's proxies

def scripted(raw, answers):
    """A server answering each "VERB /path" from `answers` (bytes of HTTP), counting them in .requests."""
    return raw(lambda conn, request: conn.sendall(answers[b" ".join(request.split(b" ")[:2]).decode()]))


def test_a_look_up_takes_only_a_version_with_every_metadata_key_the_write_sent(raw):
    body = "# Plan\n\nShip on Friday.\n"
    cut_off = mark_answer(status="created", version=4)
    server = scripted(raw, {
        "PUBLISH /doc.md": http(cut_off[:len(cut_off) // 2], length=len(cut_off)),
        "VERSIONS /doc.md": http(mark_answer(total=5, current=5)),
        "FETCH /doc.md/v4": http(mark_answer(body, version=4)),  # the body, but no title: another writer's
        "FETCH /doc.md/v5": http(mark_answer(body, version=5, title="Plan")),
    })
    got = MarkClient(server.url, token=TOKEN).publish("/doc.md", body, 3, metadata={"title": "Plan"})
    assert got == ("conflict", {"server-version": "5", "looked-up": "true", "your-version": "3"}, "")


@pytest.mark.parametrize("body", ["ours\n", ""])
def test_a_look_up_that_finds_the_write_where_it_belongs_answers_created_and_says_it_looked(raw, body):
    # An empty write too, with no FETCH beyond the look-up's own read: an empty version is never
    # kept, so FETCHing it again for its `modified` was one more than the module docstring's bound.
    cut_off = mark_answer(status="created", version=4)
    server = scripted(raw, {
        "PUBLISH /doc.md": http(cut_off[:len(cut_off) // 2], length=len(cut_off)),
        "VERSIONS /doc.md": http(mark_answer(total=4, current=4)),
        "FETCH /doc.md/v4": http(mark_answer(body, version=4, modified="2026-12-05T02:00:00Z")),
    })
    got = MarkClient(server.url, token=TOKEN).publish("/doc.md", body, 3)
    assert got == ("created", {"version": "4", "modified": "2026-12-05T02:00:00Z", "looked-up": "true"}, "")
    assert [r.split(b" ")[0] for r in server.requests] == [b"PUBLISH", b"VERSIONS", b"FETCH"]


def test_a_cached_version_has_no_current_version(raw):
    server = scripted(raw, {"FETCH /p/v7": http(mark_answer("seven\n", version=7, **{"current-version": 8}))})
    client = MarkClient(server.url)
    assert client.fetch("/p", version=7).metadata == {"version": "7", "current-version": "8"}
    assert client.fetch("/p", version=7).metadata == {"version": "7"}  # current-version changes: not kept
    assert len(server.requests) == 1


def test_proxies_given_with_a_session_leave_the_session_as_it_was(raw):
    proxy = raw(lambda conn, request: conn.sendall(http(mark_answer("via proxy\n", version=1))))
    session = requests.Session()
    client = MarkClient("http://127.0.0.1:9", session=session, proxies={"http": proxy.url})
    assert client.fetch("/p").body == "via proxy\n"
    assert session.proxies == {}


@pytest.mark.parametrize("route", ["https", "proxy"])
def test_a_write_whose_tls_handshake_or_proxy_tunnel_fails_was_not_sent(raw, tmp_path, route):
    if route == "https":  # a self-signed certificate, checked: the handshake fails
        server = raw(lambda conn, request: None, tls=tls_context(tmp_path))
        client = MarkClient(server.url, token=TOKEN)
    else:  # the proxy refuses the CONNECT tunnel to an https:// server
        server = raw(lambda conn, request: conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"))
        client = MarkClient("https://127.0.0.1:9", token=TOKEN, proxies={"https": server.url})
    with pytest.raises(MarkError) as caught:
        client.publish("/p", "x\n", expected_version=1)
    assert caught.value.status == "transport" and not caught.value.may_have_landed
    assert server.connections == 1  # not looked up: nothing was sent


# ------------------------------------------------------------ a token and a plain http:// proxy (issue 42, point 4)

@pytest.mark.parametrize("route", ["given", "the session's", "the environment's"])
def test_a_token_is_not_sent_through_a_plain_http_proxy(raw, monkeypatch, route):
    proxy = raw(lambda conn, request: conn.sendall(http(mark_answer("via proxy\n", version=1))))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    session = requests.Session() if route != "given" else None
    if route == "the session's":
        session.proxies["http"] = proxy.url
    if route == "the environment's":
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
    made = dict(token=TOKEN, session=session, proxies={"http": proxy.url} if route == "given" else None)
    with pytest.raises(ValueError, match=f"through a proxy \\(http://127.0.0.1:{proxy.url.rsplit(':', 1)[1]}") as caught:
        MarkClient("http://127.0.0.1:9", **made)
    assert "allow_insecure_http" in str(caught.value) and TOKEN not in str(caught.value)
    client = MarkClient("http://127.0.0.1:9", allow_insecure_http=True, **made)  # the caller says so: it goes
    assert client.fetch("/p").body == "via proxy\n" and TOKEN.encode() in proxy.requests[0]
    MarkClient("https://127.0.0.1:9", token=TOKEN, session=session,  # through a tunnel the token is TLS's
               proxies={"https": proxy.url} if route == "given" else None)
    MarkClient("http://127.0.0.1:9", session=session,  # without a token there is nothing to see
               proxies={"http": proxy.url} if route == "given" else None)


def test_a_proxy_credentials_are_not_named(monkeypatch):
    with pytest.raises(ValueError) as caught:
        MarkClient("http://127.0.0.1:9", token=TOKEN, proxies={"all": "http://user:pw@proxy.example:3128"})
    assert "http://proxy.example:3128" in str(caught.value) and "pw" not in str(caught.value)


# ------------------------------------------------------------ what the readers found loose (issue 42)

@pytest.mark.parametrize("call,error,named", [
    (lambda c: c.publish("/p", "x\n", 1, metadata=[("k", "v")]), TypeError, "metadata must be a mapping"),
    (lambda c: c.publish("/p", "x\n", 1, metadata="k"), TypeError, "metadata must be a mapping"),
    (lambda c: c.publish("/p", "x\n", 1, metadata={"k": "v", 3: "v"}), TypeError, "metadata keys must be str"),
    (lambda c: c.publish("/p", "x\n", 1, metadata={"auth": "other"}), ValueError, "metadata must not hold 'auth'"),
    (lambda c: c.publish("/p", "x\n", metadata={"expected-version": "1"}), ValueError,
     "metadata must not hold 'expected-version'"),
    (lambda c: c.fetch(["/p"], version=1), TypeError, "path must be str"),
    (lambda c: c.append("/p", None, 1), TypeError, "text must be str"),
    (lambda c: c.request("fetch", "/p"), ValueError, "verb must be a word of upper-case ASCII letters"),
])
def test_bad_arguments_name_themselves_before_anything_is_sent(raw, call, error, named):
    server = raw(lambda conn, request: conn.sendall(http(mark_answer(version=1))))
    with pytest.raises(error, match=named):
        call(MarkClient(server.url, token=TOKEN))
    assert server.connections == 0


def test_close_leaves_a_session_passed_in_open(raw):
    server = raw(lambda conn, request: conn.sendall(http(mark_answer("hello\n", version=1))))
    session, closed = requests.Session(), []
    session.close = lambda: closed.append(True)
    with MarkClient(server.url, session=session) as client:
        assert client.fetch("/p").body == "hello\n"
    assert closed == []  # the caller's, to close
    assert session.get(server.url + "/p").status_code == 200  # and it still works


def test_a_version_stored_again_is_the_most_recently_used(raw):
    size = mc.CACHED_VERSIONS
    server = raw(lambda conn, request: conn.sendall(
        http(mark_answer("v\n", version=request.split(b" ")[1].rsplit(b"/v", 1)[1].decode()))
        if request.startswith(b"FETCH") else http(mark_answer(status="created", version=size))))
    client = MarkClient(server.url, token=TOKEN)
    for version in range(1, size):
        client.fetch("/p", version=version)
    client.publish("/p", "mine\n", expected_version=size - 1)  # kept: the cache is full
    for version in range(1, size):
        client.fetch("/p", version=version)                       # from the cache: v(size) is now the oldest used
    client.publish("/p", "mine\n", expected_version=size - 1)  # kept again: now the newest used
    client.fetch("/p", version=size + 1)                          # so v1 goes, and v(size) stays
    before = len(server.requests)
    assert client.fetch("/p", version=size).body == "mine\n" and len(server.requests) == before
    client.fetch("/p", version=1)
    assert len(server.requests) == before + 1


def empty_then_whole(raw):
    """A server whose first FETCH /p/v2 finds the version still being written: `ok`, no body, and a
    content-hash that matches it (the real server hashes what it read); later ones read it whole.
    FETCH /p answers version 2, whole."""
    def answer(conn, request):
        if request.startswith(b"FETCH /p/v2 "):
            reads = sum(r.startswith(b"FETCH /p/v2 ") for r in server.requests)
            body = "" if reads == 1 else "two\n"
            digest = "sha256-" + hashlib.sha256(body.encode()).hexdigest()
            conn.sendall(http(mark_answer(body, version=2, **{"content-hash": digest, "current-version": 2})))
        else:
            conn.sendall(http(mark_answer("two\n", version=2)))
    server = raw(answer)
    return server


def test_an_empty_version_is_not_cached_it_may_be_a_torn_read(raw):
    server = empty_then_whole(raw)
    client = MarkClient(server.url)
    assert client.fetch("/p", version=2).body == ""      # as it came: the hash matches the empty body
    assert client.fetch("/p", version=2).body == "two\n"  # read again, not the empty answer kept
    assert client.fetch("/p", version=2).body == "two\n" and len(server.requests) == 2  # kept once whole


def test_a_current_document_is_never_answered_with_an_empty_read_of_its_version(raw):
    server = empty_then_whole(raw)
    client = MarkClient(server.url)
    with pytest.raises(MarkError) as raised:
        client.fetch("/p")
    assert raised.value.status == "transport" and "/p/v2" in raised.value.message
    assert not raised.value.may_have_landed
    assert client.fetch("/p").body == "two\n"  # the read again goes past the cache, and finds it whole


def test_an_own_publish_of_an_empty_body_is_not_kept(raw):
    # An empty body is never kept (it may be a torn read); an own PUBLISH of one was.
    server = scripted(raw, {
        "PUBLISH /doc.md": http(mark_answer(status="created", version=4)),
        "FETCH /doc.md/v4": http(mark_answer("", version=4)),
    })
    client = MarkClient(server.url, token=TOKEN)
    assert client.publish("/doc.md", "", 3).status == "created"
    assert client.fetch("/doc.md", version=4).body == ""
    assert [r.split(b" ")[0] for r in server.requests] == [b"PUBLISH", b"FETCH"]


def test_a_look_up_that_reads_a_version_empty_cannot_tell(raw):
    # The look-up took the empty read (the real server's, of a version it is still writing: maybe
    # this very write) as another body, and handed back the server-error as if nothing had landed.
    server = scripted(raw, {
        "PUBLISH /doc.md": http(mark_answer("internal error\n", status="server-error")),
        "VERSIONS /doc.md": http(mark_answer(total=4, current=4)),
        "FETCH /doc.md/v4": http(mark_answer("", version=4)),
    })
    with pytest.raises(MarkError, match="could not tell.*answered ok and no body") as raised:
        MarkClient(server.url, token=TOKEN).publish("/doc.md", "ours\n", 3)
    assert raised.value.may_have_landed
