"""Mark over QUIC (mark://): the client against the reference server, and against
scripted QUIC peers that replay what the real Demarkus server answered.

Everything runs on 127.0.0.1; the exchanges below were recorded from the real
server (../shared/real-demarkus/, upstream commit 6478dab) byte for byte.
"""

import asyncio
import os
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("aioquic")

from aioquic.asyncio import connect  # noqa: E402
from aioquic.asyncio.server import QuicServer  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat  # noqa: E402

import mark_client  # noqa: E402
import mark_publish  # noqa: E402
import mark_server  # noqa: E402
from mark_publish import MarkClient, MarkError, mark_append, mark_publish as publish_merging  # noqa: E402
from mark_server import _development_certificate, fingerprint, serve  # noqa: E402
from testkit import together  # noqa: E402

TOKEN = "quic-token"
QUIC = True  # the server fixture (conftest.py) serves Mark over QUIC too


def client(server, **kwargs):
    kwargs.setdefault("verify", False)
    return MarkClient(server.mark_url, token=TOKEN, **kwargs)


# ------------------------------------------------------- the reference server

def test_fetch_publish_append_versions_over_quic(server):
    with client(server) as c:
        assert c.publish("/doc.md", "# Hello\n\nfirst\n", expected_version=0).status == "created"
        assert c.publish("/doc.md", "# Hello\n\nfirst\n").metadata["version"] == "1"  # identical: ok, no version
        assert c.append("/doc.md", "appended\n", expected_version=1).status == "created"
        page = c.fetch("/doc.md")
        assert (page.status, page.metadata["version"], page.body) == ("ok", "2", "# Hello\n\nfirst\nappended\n")
        assert c.fetch("/doc.md", version=1).body == "# Hello\n\nfirst\n"
        versions = c.versions("/doc.md")
        assert (versions.metadata["total"], versions.metadata["chain-valid"]) == ("2", "true")
        assert c.fetch("/missing.md").status == "not-found"
        assert c.request("LIST", "/").body == "\n# Index of /\n\n- [doc.md](doc.md)\n"
        assert mark_append(c, "/doc.md", "last\n").version == 3  # the version read first, over QUIC too
        assert c.fetch("/doc.md").body.endswith("appended\nlast\n")


def test_merge_clean_and_conflicting_over_quic(server):
    base = "# Doc\n\n## A\n\na\n\n## B\n\nb\n"
    with client(server) as c:
        c.publish("/doc.md", base, expected_version=0)
        c.publish("/doc.md", base.replace("b\n", "b, theirs\n"), expected_version=1)
        clean = publish_merging(c, "/doc.md", base.replace("a\n", "a, ours\n"), 1, on_conflict="merge")
        assert (clean.status, clean.merged, clean.version) == ("ok", True, 3)
        assert c.fetch("/doc.md").body == "# Doc\n\n## A\n\na, ours\n\n## B\n\nb, theirs\n"
        clash = publish_merging(c, "/doc.md", base.replace("b\n", "b, mine\n"), 1, on_conflict="merge")
        assert (clash.status, clash.mergeable, clash.current_version) == ("conflict", False, 3)
        assert "<<<<<<< ours\nb, mine\n=======\nb, theirs\n>>>>>>> theirs\n" in clash.body
        assert c.fetch("/doc.md").metadata["version"] == "3"  # nothing published


def test_four_concurrent_writers_lose_nothing(server):
    sections = "".join(f"## {name}\n\n{name} text\n\n" for name in "ABCD")
    with client(server) as c:
        c.publish("/doc.md", sections, expected_version=0)
    def write(name):
        with client(server) as own:
            body = sections.replace(f"{name} text\n", f"{name} text, edited by {name}\n")
            return publish_merging(own, "/doc.md", body, 1, on_conflict="merge", max_retries=8)

    results = dict(zip("ABCD", together(*[lambda name=name: write(name) for name in "ABCD"])))
    assert {name: r.status for name, r in results.items()} == dict.fromkeys("ABCD", "ok")
    with client(server) as c:
        final = c.fetch("/doc.md").body
    assert all(f"{name} text, edited by {name}\n" in final for name in "ABCD")


def test_verify_trusts_the_servers_certificate_as_ca(server, tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_bytes(server.certificate_pem)
    with client(server, verify=str(ca)) as c:
        assert c.fetch("/health").status == "ok"
    with MarkClient(server.mark_url.replace("127.0.0.1", "localhost"), verify=str(ca)) as c:  # SNI: localhost
        assert c.fetch("/health").status == "ok"


def test_a_certificate_nobody_vouches_for_is_refused(server, tmp_path):
    other, _ = _development_certificate()
    ca = tmp_path / "other.pem"
    ca.write_bytes(other.public_bytes(Encoding.PEM))
    for verify in (str(ca), True):  # another CA; the system's CAs
        with client(server, verify=verify, timeout=5) as c:
            with pytest.raises(MarkError, match="handshake failed") as failure:
                c.fetch("/health")
            assert failure.value.status == "transport"


def test_nothing_listening_is_a_transport_error_that_sent_nothing(server):
    port = int(server.mark_url.rsplit(":", 1)[1])
    server.close()
    with MarkClient(f"mark://127.0.0.1:{port}", verify=False, timeout=0.5) as c:
        with pytest.raises(MarkError) as failure:
            c.fetch("/doc.md")
    assert failure.value.status == "transport" and not failure.value.may_have_landed


def test_a_connection_the_server_closed_is_replaced(server, tmp_path):
    with client(server) as c:
        c.publish("/doc.md", "one\n", expected_version=0)
        port = int(server.mark_url.rsplit(":", 1)[1])
        server.close()  # closes every QUIC connection: the client hears of it
        with serve(tmp_path / "store", token=TOKEN, log=None, quic=True, quic_port=port) as again:
            assert again.mark_url.endswith(f":{port}")
            assert c.fetch("/doc.md").body == "one\n"
            assert c.publish("/doc.md", "two\n", expected_version=1).status == "created"


def test_the_server_refuses_an_oversized_request(server, monkeypatch):
    monkeypatch.setattr(mark_server, "MAX_DOCUMENT", 1000)
    with client(server) as c:
        answer = c.publish("/big.md", "x" * 70_000 + "\n", expected_version=0)
        assert answer.status == "too-large"
        assert c.fetch("/big.md").status == "not-found"


def test_a_request_cut_off_by_its_connections_end_stores_nothing(tmp_path):
    handled = threading.Event()  # the server logs a line for the request, whatever it made of it

    class Log:
        def write(self, line):
            handled.set()

    with serve(tmp_path / "store", token=TOKEN, log=Log(), quic=True) as running:
        port = int(running.mark_url.rsplit(":", 1)[1])
        request = b"PUBLISH /cut.md\n---\nauth: " + TOKEN.encode() + b"\nexpected-version: \"0\"\n---\nhalf a bo"

        async def send_half_then_close():
            configuration = QuicConfiguration(is_client=True, alpn_protocols=["mark"], verify_mode=ssl.CERT_NONE)
            async with connect("127.0.0.1", port, configuration=configuration) as connection:
                _, writer = await connection.create_stream()
                writer.write(request)  # and no end of stream: the connection closes instead
                await connection.ping()  # the bytes are with the server before the close

        asyncio.run(send_half_then_close())
        assert handled.wait(10)
        with client(running) as c:
            assert c.fetch("/cut.md").status == "not-found"


def test_a_closed_client_says_so(server):
    c = client(server)
    c.close()
    c.close()  # twice is fine
    with pytest.raises(MarkError, match="closed"):
        c.fetch("/health")


def test_the_server_prints_its_certificate_fingerprint(server):
    printed = fingerprint(server.certificate_pem)
    assert len(printed.split(":")) == 32 and printed == printed.upper()


# ------------------------------------------------------- scripted QUIC peers

class ScriptedPeer:
    """A QUIC server on 127.0.0.1 answering each stream with `answer(request bytes)`."""

    def __init__(self, answer, alpn="mark"):
        self.requests, self.streams = [], []
        self._answer = answer
        configuration = QuicConfiguration(is_client=False, alpn_protocols=[alpn])
        configuration.certificate, configuration.private_key = _development_certificate()
        self._loop = asyncio.new_event_loop()
        threading.Thread(target=self._loop.run_forever, daemon=True).start()

        async def listen():
            return await self._loop.create_datagram_endpoint(
                lambda: QuicServer(configuration=configuration, stream_handler=self._stream),
                local_addr=("127.0.0.1", 0))

        self._transport, self._server = asyncio.run_coroutine_threadsafe(listen(), self._loop).result()
        self.url = f"mark://127.0.0.1:{self._transport.get_extra_info('sockname')[1]}"

    def _stream(self, reader, writer):
        async def exchange():
            request = await reader.read()
            self.requests.append(request)
            self.streams.append(writer.get_extra_info("stream_id"))
            writer.write(self._answer(request))
            writer.write_eof()

        self._loop.create_task(exchange())

    def close(self):
        self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)


@pytest.fixture
def peer():
    peers = []

    def make(answer, alpn="mark"):
        peers.append(ScriptedPeer(answer, alpn))
        return peers[-1]

    yield make
    for made in peers:
        made.close()


# (recording, the call that makes it, the request bytes, the response bytes)
WRITE = "s3cret-write-token"
RECORDED = [
    ("17-raw-fetch", None, lambda c: c.request("FETCH", "/doc.md"), b"FETCH /doc.md\n",
     b'---\ncontent-hash: sha256-1085b1a72cd1457bc9dff6dbf3b252e6210aa60d0a4f46e7cb61ec8b7c3b11e7\n'
     b'etag: 919bcc4352da611ee9477f60140499753b3a6b6b6e6b1cdb21c681f8b9bdbea4\nmodified: "2026-12-03T10:41:15Z"\n'
     b'status: ok\nversion: "3"\n---\n# Hello\n\nsecond version\n\nappended line\n'),
    ("18-raw-fetch-v1", None, lambda c: c.fetch("/doc.md", version=1), b"FETCH /doc.md/v1\n",
     b'---\ncontent-hash: sha256-be438fe97d9758321a5355262ea6202dc6877b786a8cbaa93120db4fcdd5a4df\n'
     b'current-version: "3"\nmodified: "2026-12-03T10:41:15Z"\nstatus: ok\nversion: "1"\n---\n'
     b'# Hello\n\nfirst version\n'),
    ("19-raw-publish-stale-conflict", WRITE, lambda c: c.publish("/doc.md", "# Hello\n\nstale raw edit\n", 1),
     b'PUBLISH /doc.md\n---\nauth: s3cret-write-token\nexpected-version: "1"\n---\n# Hello\n\nstale raw edit\n',
     b'---\nserver-version: "3"\nstatus: conflict\nyour-version: "1"\n---\n# Version Conflict\n\n'
     b'The document has been modified since you last fetched it.\n\nYour version: 1\nServer version: 3\n\n'
     b'Please fetch the latest version and reapply your edits.\n'),
    ("20-raw-publish-v4", WRITE, lambda c: c.publish("/doc.md", "# Hello\n\nfourth version\n", 3),
     b'PUBLISH /doc.md\n---\nauth: s3cret-write-token\nexpected-version: "3"\n---\n# Hello\n\nfourth version\n',
     b'---\nmodified: "2026-12-03T10:41:17Z"\nstatus: created\nversion: "4"\n---\n'),
    ("21-raw-publish-unchanged", WRITE, lambda c: c.publish("/doc.md", "# Hello\n\nfourth version\n"),
     b"PUBLISH /doc.md\n---\nauth: s3cret-write-token\n---\n# Hello\n\nfourth version\n",
     b'---\nmodified: "2026-12-03T10:41:17Z"\nstatus: ok\nversion: "4"\n---\n'),
    ("22-raw-append-v5", WRITE, lambda c: c.append("/doc.md", "raw appended line\n", 4),
     b'APPEND /doc.md\n---\nauth: s3cret-write-token\nexpected-version: "4"\n---\nraw appended line\n',
     b'---\nmodified: "2026-12-03T10:41:18Z"\nstatus: created\nversion: "5"\n---\n'),
    ("23-raw-versions", None, lambda c: c.versions("/doc.md"), b"VERSIONS /doc.md\n",
     b'---\nchain-valid: "true"\ncurrent: "5"\nstatus: ok\ntotal: "5"\n---\n\n# Version History: /doc.md\n\n'
     b'- [v5](%2Fdoc.md/v5) - 2026-12-03T10:41:18Z\n- [v4](%2Fdoc.md/v4) - 2026-12-03T10:41:17Z\n'
     b'- [v3](%2Fdoc.md/v3) - 2026-12-03T10:41:15Z\n- [v2](%2Fdoc.md/v2) - 2026-12-03T10:41:15Z\n'
     b'- [v1](%2Fdoc.md/v1) - 2026-12-03T10:41:15Z\n'),
    ("24-raw-list", None, lambda c: c.request("LIST", "/"), b"LIST /\n",
     b'---\nentries: "1"\nstatus: ok\n---\n\n# Index of /\n\n- [doc.md](doc.md)\n'),
    ("25-raw-fetch-missing", None, lambda c: c.fetch("/missing.md"), b"FETCH /missing.md\n",
     b"---\nstatus: not-found\n---\n\n# Not found\n\n/missing.md not found\n"),
    ("26-raw-publish-no-auth", None, lambda c: c.publish("/other.md", "\n# no auth\n"),
     b"PUBLISH /other.md\n\n# no auth\n",
     b"---\nstatus: unauthorized\n---\n\n# Unauthorized\n\nauthentication required\n"),
    ("27-raw-bad-verb", None, lambda c: c.request("BOGUS", "/doc.md"), b"BOGUS /doc.md\n",
     b"---\nstatus: server-error\n---\n\n# Server error\n\nbad request\n"),
    ("28-raw-fetch-latest", None, lambda c: c.request("FETCH", "/doc.md"), b"FETCH /doc.md\n",
     b'---\ncontent-hash: sha256-3409d7c24d49a87f45c86d7c8c304609a671bda855fcec63a8bfedccbd8e1352\n'
     b'etag: dae09f68d0667376ee063e3f4472b962a7be31e7c9ad37e5f3fb6282a1d9782a\nmodified: "2026-12-03T10:41:18Z"\n'
     b'status: ok\nversion: "5"\n---\n# Hello\n\nfourth version\nraw appended line\n'),
    ("29-raw-fetch-if-none-match", None,
     lambda c: c.request("FETCH", "/doc.md", {"if-none-match": "dae09f68d0667376ee063e3f4472b962a7be31e7c9ad37e5f3fb6282a1d9782a"}),
     b"FETCH /doc.md\n---\nif-none-match: dae09f68d0667376ee063e3f4472b962a7be31e7c9ad37e5f3fb6282a1d9782a\n---\n",
     b"---\nstatus: not-modified\n---\n"),
    ("35-raw-private-no-token", None, lambda c: c.fetch("/private/p.md"), b"FETCH /private/p.md\n",
     b"---\nstatus: unauthorized\n---\n\n# Unauthorized\n\nauthentication required\n"),
    ("36-raw-private-read-token", "rtok", lambda c: c.request("FETCH", "/private/p.md"),
     b"FETCH /private/p.md\n---\nauth: rtok\n---\n",
     b'---\ncontent-hash: sha256-ac23c3abc5d73c2d832012729ab8b6a7386b3197b91f80b1ef1f2372f3fbd662\n'
     b'etag: aca1c9b5f22c9e9dc6015674d14387435c215aa96429988ba832152bf721ee19\nmodified: "2026-12-03T10:41:31Z"\n'
     b'status: ok\nversion: "1"\n---\n# secret\n'),
    ("37-raw-private-write-token-not-permitted", "tok2", lambda c: c.fetch("/private/p.md"),
     b"FETCH /private/p.md\n---\nauth: tok2\n---\n",
     b"---\nstatus: not-permitted\n---\n\n# Not permitted\n\ninsufficient permissions\n"),
]


@pytest.mark.parametrize("name,token,call,request_bytes,response_bytes", RECORDED, ids=[r[0] for r in RECORDED])
def test_requests_are_the_recorded_bytes(peer, name, token, call, request_bytes, response_bytes):
    real = peer(lambda request: response_bytes)
    with MarkClient(real.url, token=token, verify=False) as c:
        answer = call(c)
    assert real.requests == [request_bytes]
    status = response_bytes.split(b"status: ")[1].split(b"\n")[0].decode()
    assert answer.status == status  # and the recorded answer reads back


@pytest.mark.parametrize("answer", [b"no frontmatter\n", b"---\nversion: 1\n---\n", b"---\nstatus: ok\n"])
def test_a_malformed_answer_is_a_transport_error(peer, answer):
    odd = peer(lambda request: answer)
    with MarkClient(odd.url, verify=False, timeout=5) as c:
        with pytest.raises(MarkError, match="not a Mark response") as failure:
            c.fetch("/doc.md")
    assert failure.value.status == "transport"


def test_an_empty_answer_is_a_refusal_sent_again_on_a_new_connection(peer):
    # The real server's rate limit ends a stream unread and unanswered, and never frees
    # its slot: the client sends the request again, after a pause, on a new connection.
    answers = iter([b"", b"", b'---\nstatus: ok\nversion: "1"\n---\nhello\n'])
    busy = peer(lambda request: next(answers))
    with MarkClient(busy.url, verify=False, timeout=5) as c:
        assert c.request("FETCH", "/doc.md").body == "hello\n"
    assert busy.requests == [b"FETCH /doc.md\n"] * 3
    assert busy.streams == [0, 0, 0]  # each on a connection of its own


def test_a_server_that_keeps_refusing_is_its_own_kind_of_error(peer, monkeypatch):
    monkeypatch.setattr(mark_client, "REFUSED_TRIES", 3)
    wall = peer(lambda request: b"")
    with MarkClient(wall.url, verify=False, timeout=30) as c:
        with pytest.raises(MarkError, match="refused the last send without handling it .*, 3 sends in all") as failure:
            c.publish("/doc.md", "x\n", expected_version=1)
    assert failure.value.status == "refused"
    assert len(wall.requests) == 3


def test_a_wrong_alpn_is_refused(peer):
    http3 = peer(lambda request: b"---\nstatus: ok\n---\n", alpn="h3")
    with MarkClient(http3.url, verify=False, timeout=5) as c:
        with pytest.raises(MarkError, match="handshake failed") as failure:
            c.fetch("/doc.md")
    assert failure.value.status == "transport"


def test_an_answer_past_the_limit_is_refused(peer, monkeypatch):
    monkeypatch.setattr(mark_client, "MAX_RESPONSE_BYTES", 1000)
    big = peer(lambda request: b"---\nstatus: ok\n---\n" + b"x" * 5000)
    with MarkClient(big.url, verify=False, timeout=5) as c:
        with pytest.raises(MarkError, match="larger than 1000 bytes"):
            c.fetch("/doc.md")


def test_one_connection_carries_every_request(peer):
    counted = peer(lambda request: b"---\nstatus: ok\n---\n")
    with MarkClient(counted.url, verify=False) as c:
        for _ in range(3):
            c.fetch("/doc.md")
        held = len(c._link._protocol._stream_readers)
    assert counted.streams == [0, 4, 8]  # a new connection would start again at stream 0
    assert held == 0  # a long-lived client keeps nothing of the streams it is done with


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="verify"):
        MarkClient("mark://127.0.0.1", verify="/no/such/ca.pem")
    with pytest.raises(ValueError, match="session and proxies"):
        MarkClient("mark://127.0.0.1", proxies={"https": "http://proxy"})
    with pytest.raises(ValueError, match="without a path"):
        MarkClient("mark://127.0.0.1/docs")
    with MarkClient("mark://127.0.0.1:1", verify=False) as c:
        with pytest.raises(ValueError, match="verb"):
            c.request("FE TCH", "/doc.md")


def test_the_cli_speaks_quic(server, tmp_path, capsys, monkeypatch):
    source = tmp_path / "notes.md"
    source.write_text("# Notes\n", encoding="utf-8")
    monkeypatch.setenv("MARK_TOKEN", TOKEN)
    code = mark_publish.main(["--server", server.mark_url, "--insecure", "/notes.md",
                              "--expected-version", "0", "--file", str(source)])
    assert code == 0 and capsys.readouterr().out == "status: ok\nversion: 1\nmerged: false\n"


def test_mark_server_quic_from_the_command_line(tmp_path):
    certificate, key = _development_certificate()
    cert, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_bytes(certificate.public_bytes(Encoding.PEM))
    key_file.write_bytes(key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("mark_server.py")), "--root", str(tmp_path / "store"),
         "--port", "0", "--quic", "--tls-cert", str(cert), "--tls-key", str(key_file)],
        env={**os.environ, "MARK_TOKEN": TOKEN}, stderr=subprocess.PIPE, text=True)
    try:
        http_line, quic_line = process.stderr.readline(), process.stderr.readline()
        http_url = http_line.rsplit(" at ", 1)[1].strip()
        mark_url = quic_line.split(" at ", 1)[1].split(",")[0]
        assert mark_url == http_url.replace("http://", "mark://")  # the same port number
        assert fingerprint(cert.read_bytes()) in quic_line and "development" not in quic_line
        with MarkClient(mark_url, token=TOKEN, verify=str(cert)) as c:
            assert c.publish("/cli.md", "from the CLI\n", expected_version=0).status == "created"
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.parametrize("verb", ["PUBLISH", "APPEND"])
def test_a_write_the_look_up_cannot_explain_says_it_may_have_landed(peer, verb):
    # The write is answered server-error (the real server can answer it after storing), and
    # so is the look-up's VERSIONS: whether the write landed is unknown, and the error says so.
    broken = peer(lambda request: b'---\nstatus: server-error\n---\n# Server error\n')
    with MarkClient(broken.url, verify=False, timeout=5) as c:
        write = c.publish if verb == "PUBLISH" else c.append
        with pytest.raises(MarkError, match="a look-up could not tell whether it landed") as failure:
            write("/doc.md", "x\n", expected_version=1)
    assert (failure.value.status, failure.value.may_have_landed) == ("transport", True)
    assert [request.split(b" ")[0] for request in broken.requests] == [verb.encode(), b"VERSIONS"]
