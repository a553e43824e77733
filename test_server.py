"""mark_server.py over real sockets on 127.0.0.1: statuses, store, concurrency, bad input."""

import hashlib
import http.client
import io
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mark_client import read_frontmatter, write_frontmatter
from mark_server import MarkServer, serve
from testkit import together

TOKEN = "dev-token"


def send(server, verb, path, metadata=None, body="", raw=None):
    """One exchange with http.client: (status, metadata, body) of the Mark response."""
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    if raw is None:
        raw = ((write_frontmatter(metadata) if metadata is not None else "") + body).encode("utf-8")
    connection.request(verb, path, body=raw, headers={"Content-Length": str(len(raw))})
    reply = connection.getresponse()
    assert reply.status == 200
    meta, text = read_frontmatter(reply.read().decode("utf-8"))
    connection.close()
    return meta.pop("status"), meta, text


def publish(server, path, body, expected=None, token=TOKEN):
    metadata = {"auth": token} if token else {}
    if expected is not None:
        metadata["expected-version"] = str(expected)
    return send(server, "PUBLISH", path, metadata, body)


def alive(server):
    return send(server, "FETCH", "/health")[0] == "ok"


# ---------------------------------------------------------------- statuses

def test_publish_fetch_versions_cycle(server):
    status, meta, _ = publish(server, "/doc.md", "one\n", 0)
    assert (status, meta["version"]) == ("created", "1")
    status, meta, body = send(server, "FETCH", "/doc.md")
    assert (status, meta["version"], body) == ("ok", "1", "one\n")
    assert meta["etag"] == hashlib.sha256(b"one\n").hexdigest() and meta["modified"].endswith("Z")
    assert publish(server, "/doc.md", "two\n", 1)[0] == "created"
    status, meta, body = send(server, "FETCH", "/doc.md/v1")
    assert (status, meta["version"], meta["current-version"], body) == ("ok", "1", "2", "one\n")
    status, meta, _ = send(server, "VERSIONS", "/doc.md")
    assert (status, meta["total"], meta["current"], meta["chain-valid"]) == ("ok", "2", "2", "true")


# What the real Demarkus server answers (../shared/real-demarkus/, recorded at
# upstream commit 6478dab), timestamps and hashes aside.

def test_fetches_carry_the_content_hash(server):
    publish(server, "/doc.md", "# Hello\n\nfourth version\nraw appended line\n")
    digest = "sha256-3409d7c24d49a87f45c86d7c8c304609a671bda855fcec63a8bfedccbd8e1352"  # recorded
    assert send(server, "FETCH", "/doc.md")[1]["content-hash"] == digest
    assert send(server, "FETCH", "/doc.md/v1")[1]["content-hash"] == digest


def test_stale_publish_and_versions_read_like_the_real_servers(server):
    for n in range(3):
        publish(server, "/doc.md", f"v{n + 1}\n", n)
    status, meta, body = publish(server, "/doc.md", "stale\n", 1)
    assert (status, meta) == ("conflict", {"server-version": "3", "your-version": "1"})
    assert body == ("# Version Conflict\n\nThe document has been modified since you last fetched it.\n\n"
                    "Your version: 1\nServer version: 3\n\nPlease fetch the latest version and reapply your edits.\n")
    status, meta, body = send(server, "VERSIONS", "/doc.md")
    modified = {n: send(server, "FETCH", f"/doc.md/v{n}")[1]["modified"] for n in (1, 2, 3)}
    assert (status, meta) == ("ok", {"chain-valid": "true", "current": "3", "total": "3"})
    assert body == "\n# Version History: /doc.md\n\n" + "".join(
        f"- [v{n}](%2Fdoc.md/v{n}) - {modified[n]}\n" for n in (3, 2, 1))
    assert send(server, "FETCH", "/health") == ("ok", {}, "# Health Check\n\nServer is healthy.\n")


def test_publisher_metadata_is_kept_and_given_back(server):
    assert send(server, "PUBLISH", "/a.md", {"auth": TOKEN, "agent": "mcp", "expected-version": "0"}, "x\n")[0] == "created"
    assert send(server, "APPEND", "/a.md", {"auth": TOKEN, "expected-version": "1", "tag": "log"}, "y\n")[0] == "created"
    meta = send(server, "FETCH", "/a.md")[1]
    assert (meta["agent"], meta["tag"]) == ("mcp", "log")  # APPEND keeps what the version before had
    assert "auth" not in meta and "expected-version" not in meta  # what steers a request is not kept
    assert send(server, "FETCH", "/a.md/v1")[1]["agent"] == "mcp"
    status, _, body = send(server, "PUBLISH", "/a.md", {"auth": TOKEN, "version": "9"}, "z\n")
    assert (status, body) == ("bad-request", '\n# Bad request\n\nmetadata key "version" is reserved\n')


def test_not_modified_with_etag(server):
    publish(server, "/a.md", "x\n")
    etag = send(server, "FETCH", "/a.md")[1]["etag"]
    assert send(server, "FETCH", "/a.md", {"if-none-match": etag}) == ("not-modified", {}, "")
    assert send(server, "FETCH", "/a.md", {"if-none-match": "other"})[0] == "ok"


def test_not_found_bodies_look_real(server):
    assert send(server, "FETCH", "/a.md") == ("not-found", {}, "\n# Not found\n\n/a.md not found\n")
    publish(server, "/a.md", "x")
    assert send(server, "FETCH", "/a.md/v9")[0] == "not-found"
    assert send(server, "VERSIONS", "/nope.md")[0] == "not-found"


def test_conflict_writes_nothing(server):
    publish(server, "/a.md", "v1\n", 0)
    status, meta, body = publish(server, "/a.md", "stale\n", 0)
    assert (status, meta) == ("conflict", {"your-version": "0", "server-version": "1"})
    assert body == ("# Version Conflict\n\nA document already exists at this path (version 1).\n\n"
                    "Fetch the current version and publish with the correct expected-version to update it.\n")
    assert publish(server, "/a.md", "stale\n", 5)[1]["server-version"] == "1"
    assert send(server, "FETCH", "/a.md")[2] == "v1\n"


def test_identical_body_creates_no_version(server):
    publish(server, "/a.md", "same\n")
    assert publish(server, "/a.md", "same\n", 1)[:2] == ("ok", {"version": "1", "modified": send(
        server, "FETCH", "/a.md")[1]["modified"]})
    assert send(server, "VERSIONS", "/a.md")[1]["total"] == "1"


def test_unconditional_publish(server):
    publish(server, "/a.md", "1")
    assert publish(server, "/a.md", "2")[1]["version"] == "2"


def test_append(server):
    publish(server, "/log.md", "first")
    assert send(server, "APPEND", "/log.md", {"auth": TOKEN, "expected-version": "1"}, "second\n")[0] == "created"
    assert send(server, "FETCH", "/log.md")[2] == "first\nsecond\n"  # a newline only where one lacked
    assert send(server, "APPEND", "/log.md", {"auth": TOKEN, "expected-version": "2"}, "third")[0] == "created"
    assert send(server, "FETCH", "/log.md")[2] == "first\nsecond\nthird"
    status, meta, body = send(server, "APPEND", "/log.md", {"auth": TOKEN, "expected-version": "1"}, "x")
    assert (status, meta) == ("conflict", {"your-version": "1", "server-version": "3"})
    assert body == ("# Version Conflict\n\nThe document has been modified since you last fetched it.\n\n"
                    "Your version: 1\nServer version: 3\n\n"
                    "Fetch the latest version and verify whether your append was applied before retrying.\n")
    for metadata, body in (({"auth": TOKEN}, "x"), ({"auth": TOKEN, "expected-version": "0"}, "x"),
                           ({"auth": TOKEN, "expected-version": "3"}, "")):
        assert send(server, "APPEND", "/log.md", metadata, body)[0] == "bad-request"
    # A missing document is not-found whatever version is expected, as the real server answers.
    assert send(server, "APPEND", "/none.md", {"auth": TOKEN, "expected-version": "1"}, "x")[0] == "not-found"


def test_archive_and_unarchive(server):
    publish(server, "/a.md", "text")
    assert send(server, "ARCHIVE", "/a.md", {"auth": TOKEN})[:2] == ("ok", {"version": "1", "archived": "true"})
    assert send(server, "FETCH", "/a.md")[0] == "archived"
    assert publish(server, "/a.md", "new")[0] == "archived"
    assert publish(server, "/a.md", "")[:2] == ("ok", {"version": "1"})
    assert send(server, "FETCH", "/a.md")[2] == "text"
    assert publish(server, "/a.md", "")[0] == "bad-request"
    assert send(server, "ARCHIVE", "/gone.md", {"auth": TOKEN})[0] == "not-found"


def test_list(server):
    publish(server, "/a.md", "x")
    publish(server, "/docs/b.md", "y")
    publish(server, "/docs/my_[draft].md", "z")
    assert send(server, "LIST", "/") == ("ok", {"entries": "2"}, "\n# Index of /\n\n- [a.md](a.md)\n- [docs/](docs/)\n")
    assert send(server, "LIST", "/docs") == (
        "ok", {"entries": "2"}, "\n# Index of /docs/\n\n- [b.md](b.md)\n- [my\\_\\[draft\\].md](my_%5Bdraft%5D.md)\n")
    assert send(server, "LIST", "/missing/")[0] == "not-found"


# ------------------------------------------------------------------- auth

def test_auth_statuses(tmp_path, server):
    assert publish(server, "/a.md", "x", token=None)[0] == "unauthorized"
    assert publish(server, "/a.md", "x", token="wrong")[0] == "unauthorized"
    with serve(tmp_path / "other", token="") as closed:
        assert publish(closed, "/a.md", "x")[0] == "not-permitted"
        assert send(closed, "FETCH", "/health")[0] == "ok"


def hashed(token):
    return "sha256-" + hashlib.sha256(token.encode()).hexdigest()


def token_file(tmp_path, **tables):
    """A Demarkus token file: [tokens.LABEL] tables, each given as its TOML lines."""
    path = tmp_path / "tokens.toml"
    path.write_text("".join(f"[tokens.{label}]\n{lines}\n" for label, lines in tables.items()))
    return path


def grant(token, paths, operations, expires=None):
    """The TOML lines of one token's table."""
    lines = f'hash = "{hashed(token)}"\npaths = {json.dumps(paths)}\noperations = {json.dumps(operations)}'
    return lines + (f"\nexpires = {expires}" if expires else "")


needs_tomllib = pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")


@needs_tomllib
def test_token_file(tmp_path):
    tokens = token_file(
        tmp_path,
        docs=grant("s3cret-docs", ["/docs/*"], ["publish"]),
        deep=grant("deep", ["/team/**/*.md"], ["publish"]),
        old=grant("old", ["/**"], ["publish"], expires='"2030-01-01T10:00:00+05:00"'),
        gone=grant("gone", ["/**"], ["publish"], expires="2001-01-01T00:00:00+05:00"),
    )
    with serve(tmp_path / "store", token="", tokens_file=tokens) as server:
        assert publish(server, "/docs/a.md", "x", token="s3cret-docs")[0] == "created"
        assert publish(server, "/docs/a/b/c.md", "x", token="s3cret-docs")[0] == "not-permitted"  # * stops at /
        assert publish(server, "/a.md", "x", token="s3cret-docs")[0] == "not-permitted"
        # publish grants every write verb
        assert send(server, "APPEND", "/docs/a.md", {"auth": "s3cret-docs", "expected-version": "1"}, "y")[0] == "created"
        assert send(server, "ARCHIVE", "/docs/a.md", {"auth": "s3cret-docs"})[0] == "ok"
        assert publish(server, "/team/x/y/plan.md", "x", token="deep")[0] == "created"
        assert publish(server, "/team/plan.md", "x", token="deep")[0] == "created"
        assert publish(server, "/team/x/plan.txt", "x", token="deep")[0] == "not-permitted"
        assert publish(server, "/b.md", "x", token="old")[0] == "created"
        assert publish(server, "/c.md", "x", token="gone")[0] == "unauthorized"  # compared as a time
    stored = [path.read_bytes() for path in (tmp_path / "store").rglob("*") if path.is_file()]
    assert stored and not any(b"s3cret" in data for data in stored)  # the server keeps no token


@needs_tomllib
def test_read_grants_protect_their_paths(tmp_path):
    tokens = token_file(
        tmp_path,
        reader=grant("rtok", ["/private/**"], ["read"]),
        writer=grant("wtok", ["/**"], ["publish"]),
    )
    with serve(tmp_path / "store", token="", tokens_file=tokens) as server:
        assert publish(server, "/private/p.md", "# secret\n", token="wtok")[0] == "created"
        assert publish(server, "/open.md", "# open\n", token="wtok")[0] == "created"
        for verb, path in (("FETCH", "/private/p.md"), ("FETCH", "/private/p.md/v1"),
                           ("VERSIONS", "/private/p.md"), ("LIST", "/private/"), ("LIST", "/private")):
            assert send(server, verb, path)[0] == "unauthorized"
            assert send(server, verb, path, {"auth": "wtok"})[0] == "not-permitted"
            assert send(server, verb, path, {"auth": "rtok"})[0] == "ok"
        assert send(server, "FETCH", "/private/p.md")[2] == "\n# Unauthorized\n\nauthentication required\n"
        assert send(server, "FETCH", "/open.md")[2] == "# open\n"
        assert send(server, "FETCH", "/health")[0] == "ok"


BAD_TOKEN_FILES = {
    "paths as a string": f'hash = "{hashed("t")}"\npaths = "/docs/*"\noperations = ["publish"]',
    "two **": f'hash = "{hashed("t")}"\npaths = ["/a/**/b/**"]\noperations = ["publish"]',
    "** inside a segment": f'hash = "{hashed("t")}"\npaths = ["/a/b**"]\noperations = ["publish"]',
    "unknown operation": f'hash = "{hashed("t")}"\npaths = ["/**"]\noperations = ["write"]',
    "unparsable expires": f'hash = "{hashed("t")}"\npaths = ["/**"]\noperations = ["read"]\nexpires = "soon"',
    "expires without offset": f'hash = "{hashed("t")}"\npaths = ["/**"]\noperations = ["read"]\n'
                              'expires = 2030-01-01T00:00:00',
    "bad hash": 'hash = "t"\npaths = ["/**"]\noperations = ["read"]',
}


@needs_tomllib
@pytest.mark.parametrize("name", BAD_TOKEN_FILES)
def test_malformed_token_file_refuses_to_load(tmp_path, name):
    with pytest.raises(ValueError):
        serve(tmp_path / "store", token="", tokens_file=token_file(tmp_path, t=BAD_TOKEN_FILES[name]))


@needs_tomllib
def test_two_labels_with_one_hash_refuse_to_load(tmp_path):
    same = grant("t", ["/**"], ["read"])
    with pytest.raises(ValueError, match="same hash"):
        serve(tmp_path / "store", token="", tokens_file=token_file(tmp_path, a=same, b=same))


def test_blank_dev_token_refuses_to_start(tmp_path):
    with pytest.raises(ValueError, match="blank"):
        serve(tmp_path / "store", token=" ")


def test_one_log_line_per_request_never_the_token(tmp_path):
    log = io.StringIO()
    with serve(tmp_path, token=TOKEN, log=log) as server:
        publish(server, "/a.md", "x")
        publish(server, "/a.md", "y", token="wrong-secret")
    assert log.getvalue() == "PUBLISH '/a.md' created\nPUBLISH '/a.md' unauthorized\n"


# ------------------------------------------------------------------ store

def test_store_layout_and_hash_chain(server, tmp_path):
    root = tmp_path / "store"
    for n in range(30):
        assert publish(server, "/d/doc.md", f"body {n}\n", n)[0] == "created"
    link = root / "d" / "doc.md"
    assert link.is_symlink() and os.readlink(link).endswith("versions/d/doc.md.v30")
    previous = None
    for n in range(1, 31):
        data = (root / "versions" / "d" / f"doc.md.v{n}").read_bytes()
        assert data.endswith(f"body {n - 1}\n".encode()) and f'version: "{n}"'.encode() in data
        if previous:
            assert f"previous-hash: sha256-{hashlib.sha256(previous).hexdigest()}".encode() in data
        previous = data
    assert send(server, "VERSIONS", "/d/doc.md")[1]["chain-valid"] == "true"


def test_tampered_version_breaks_chain(server, tmp_path):
    for n in range(3):
        publish(server, "/a.md", f"{n}", n)
    version = tmp_path / "store" / "versions" / "a.md.v2"
    version.chmod(0o644)
    version.write_bytes(version.read_bytes() + b"tampered")
    assert send(server, "VERSIONS", "/a.md")[1]["chain-valid"] == "false"


def test_restart_keeps_every_version(tmp_path):
    with serve(tmp_path, token=TOKEN) as first:
        for n in range(5):
            publish(first, "/a.md", f"v{n + 1}", n)
    with serve(tmp_path, token=TOKEN) as second:
        assert send(second, "FETCH", "/a.md")[1]["version"] == "5"
        assert [send(second, "FETCH", f"/a.md/v{n}")[2] for n in range(1, 6)] == [f"v{n}" for n in range(1, 6)]
        assert publish(second, "/a.md", "v6", 5)[0] == "created"


def test_sixteen_writers_one_winner_per_version(server):
    publish(server, "/race.md", "v1", 0)
    for expected in range(1, 6):
        results = together(*[lambda n=n: publish(server, "/race.md", f"writer {n} at {expected}", expected)
                             for n in range(16)])
        statuses = sorted(status for status, _, _ in results)
        assert statuses == ["conflict"] * 15 + ["created"]
        assert [meta["version"] for status, meta, _ in results if status == "created"] == [str(expected + 1)]
    status, meta, _ = send(server, "VERSIONS", "/race.md")
    assert (meta["total"], meta["chain-valid"]) == ("6", "true")


# -------------------------------------------------------------- bad input

BAD = [
    ("malformed frontmatter", "PUBLISH", "/a.md", b"---\nauth: [\n---\nbody", "bad-request"),
    ("unclosed frontmatter", "PUBLISH", "/a.md", b"---\nauth: x\nbody", "bad-request"),
    ("bad escape", "PUBLISH", "/a.md", b'---\nauth: "\\q"\n---\nx', "bad-request"),
    ("huge escape", "PUBLISH", "/a.md", b'---\nauth: "\\UFFFFFFFF"\n---\nx', "bad-request"),
    ("metadata over 64 KiB", "PUBLISH", "/a.md", b"---\nk: " + b"x" * 70000 + b"\n---\nx", "too-large"),
    ("unknown verb", "DELETE", "/a.md", b"", "bad-request"),
    ("non-UTF-8 body", "PUBLISH", "/a.md", b"---\nauth: \"dev-token\"\n---\n\xff\xfe", "bad-request"),
    ("invalid expected-version", "PUBLISH", "/a.md", b'---\nauth: "dev-token"\nexpected-version: "-1"\n---\nx',
     "bad-request"),
    ("huge expected-version", "PUBLISH", "/a.md",
     b'---\nauth: "dev-token"\nexpected-version: "99999999999999999999999"\n---\nx', "bad-request"),
    ("control character in path", "FETCH", "/a%01.md", b"", "bad-request"),
    ("NUL in path", "FETCH", "/a%00.md", b"", "bad-request"),
    ("dot-dot inside root", "FETCH", "/docs/../a.md", b"", "not-found"),
    ("dot-dot outside root", "FETCH", "/../../etc/passwd", b"", "not-found"),
    ("encoded dot-dot", "FETCH", "/%2e%2e/%2e%2e/etc/passwd", b"", "not-found"),
    ("version store", "FETCH", "/versions/a.md.v1", b"", "not-found"),
    ("bad percent-encoding", "FETCH", "/%ff.md", b"", "bad-request"),
    ("lone surrogate in auth", "PUBLISH", "/a.md", b'---\nauth: "\\ud800"\n---\nx', "bad-request"),
    ("superscript digit version", "PUBLISH", "/a.md", '---\nauth: "dev-token"\nexpected-version: "²"\n---\nx'
     .encode(), "bad-request"),
    ("Arabic-Indic digit version", "PUBLISH", "/a.md", '---\nauth: "dev-token"\nexpected-version: "١"\n---\nx'
     .encode(), "bad-request"),
    ("5000-digit version path", "FETCH", "/a.md/v" + "9" * 5000, b"", "bad-request"),
    ("document under a document", "PUBLISH", "/a.md/b.md", b'---\nauth: "dev-token"\n---\nx', "not-found"),
    ("over-long segment", "PUBLISH", "/" + "s" * 300 + ".md", b'---\nauth: "dev-token"\n---\nx', "bad-request"),
    ("over-long path", "FETCH", "/d" * 600, b"", "bad-request"),
    ("a document named like a version", "PUBLISH", "/notes/v1", b'---\nauth: "dev-token"\n---\nx', "bad-request"),
    ("a document named health", "PUBLISH", "/health", b'---\nauth: "dev-token"\n---\nx', "bad-request"),
]


@pytest.mark.parametrize("name,verb,path,raw,status", BAD, ids=[b[0] for b in BAD])
def test_bad_input_answered_and_server_keeps_serving(server, name, verb, path, raw, status):
    publish(server, "/a.md", "kept", 0)
    assert send(server, verb, path, raw=raw)[0] == status
    assert alive(server)
    assert send(server, "FETCH", "/a.md")[2] == "kept"


def test_document_over_10_mib(server):
    body = "x" * (10 * 1024 * 1024 + 1)
    assert publish(server, "/big.md", body)[0] == "too-large"
    huge = b"y" * (11 * 1024 * 1024)
    assert send(server, "PUBLISH", "/big.md", raw=huge)[0] == "too-large"
    assert alive(server)


def test_symlink_escapes_find_nothing(server, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    root = tmp_path / "store"
    (root / "escape").symlink_to(outside)
    (root / "leak.md").symlink_to(outside / "secret.md")
    for path in ("/escape/secret.md", "/leak.md", "/escape/"):
        verb = "LIST" if path.endswith("/") else "FETCH"
        status, _, body = send(server, verb, path)
        assert status == "not-found" and "secret" not in body.replace("secret.md", "")
    assert publish(server, "/escape/new.md", "x")[0] == "not-found"
    assert not (outside / "new.md").exists()
    assert (root / "leak.md").resolve() == outside / "secret.md"


def test_garbage_and_slow_clients_do_not_hang_it(server):
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as raw:
        raw.sendall(b"\x00\x01 garbage \r\n\r\n")
        raw.recv(1000)
    idle = socket.create_connection((parts.hostname, parts.port), timeout=5)  # says nothing
    try:
        assert alive(server)
        # The whole chunked request is sent before the answer is read: the
        # server refuses it unread and closes, and must find nothing still coming.
        with socket.create_connection((parts.hostname, parts.port), timeout=5) as chunked:
            chunked.sendall(b"PUBLISH /a.md HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"1\r\nx\r\n0\r\n\r\n")
            answer = b""
            while chunk := chunked.recv(65536):
                answer += chunk
        assert b"status: bad-request" in answer
    finally:
        idle.close()
    assert alive(server)


# ------------------------------------------------- acknowledged means stored

def test_cut_off_upload_stores_nothing(server):
    publish(server, "/a.md", "v1\n", 0)
    body = "x" * 100_000
    raw = (write_frontmatter({"auth": TOKEN, "expected-version": "1"}) + body).encode()
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(f"PUBLISH /a.md HTTP/1.1\r\nHost: x\r\nContent-Length: {len(raw)}\r\n\r\n".encode())
        conn.sendall(raw[:len(raw) // 2])  # half, then the client is gone
    assert alive(server)
    assert send(server, "VERSIONS", "/a.md")[1]["total"] == "1"
    assert publish(server, "/a.md", "v2\n", 1)[0] == "created"


def run_store(tmp_path, code: str) -> str:
    """Run `code` in a fresh interpreter with `store` = a Store on tmp_path/store; its stdout."""
    script = (
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from pathlib import Path\n"
        "from mark_server import Store, MarkFailure, dispatch\n"
        f"store = Store(Path({str(tmp_path / 'store')!r}))\n"
        "def publish(path, body, expected):\n"
        "    try:\n"
        "        return dispatch(store, 'PUBLISH', path, {'expected-version': str(expected)}, body)[0]\n"
        "    except MarkFailure as failure:\n"
        "        return failure.status\n"
        "    except OSError as error:\n"
        "        return 'server-error ' + type(error).__name__\n"
        + code
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_short_writes_are_completed(tmp_path):
    out = run_store(tmp_path, (
        "real = os.write\n"
        "os.write = lambda fd, data: real(fd, bytes(data[:1000]))  # a disk that takes 1000 bytes a call\n"
        "print(publish('/a.md', 'y' * (1 << 20), 0))\n"
        "os.write = real\n"
        "print(len(dispatch(store, 'FETCH', '/a.md', {}, '')[2]))\n"
    ))
    assert out.split() == ["created", str(1 << 20)]


@pytest.mark.parametrize("failing", ["write", "fsync", "symlink", "replace"])
def test_failed_write_leaves_nothing_and_wedges_nothing(tmp_path, failing):
    out = run_store(tmp_path, (
        "print(publish('/a.md', 'v1', 0))\n"
        f"real = os.{failing}\n"
        "def broken(*args, **kwargs):\n"
        "    raise OSError(28, 'No space left on device')\n"
        f"os.{failing} = broken\n"
        "print(publish('/a.md', 'v2', 1))\n"
        f"os.{failing} = real\n"
        "print(publish('/a.md', 'v2 again', 1))\n"
        "print(sorted(p.name for p in Path(store.root).rglob('*') if p.name != '.lock'))\n"
    ))
    first, failed, retried, files = out.strip().split("\n")
    assert (first, failed, retried) == ("created", "server-error OSError", "created")
    assert files == str(sorted(["a.md", "versions", "a.md.v1", "a.md.v2"]))


def test_crash_leftovers_are_swept_and_never_a_conflict(tmp_path):
    root = tmp_path / "store"
    with serve(root, token=TOKEN, log=None) as first:
        publish(first, "/a.md", "v1\n", 0)
    # What kill -9 can leave between the two steps of a write.
    (root / "versions" / "a.md.v2").write_text("---\nversion: \"2\"\n---\nhalf")
    os.symlink("versions/a.md.v2", root / f".a.md.{'0' * 32}")
    with serve(root, token=TOKEN, log=None) as second:
        assert not (root / f".a.md.{'0' * 32}").is_symlink()
        assert not (root / "versions" / "a.md.v2").exists()
        (root / "versions" / "a.md.v2").write_text("met after start")  # and one met while serving
        assert publish(second, "/a.md", "v2\n", 1)[0] == "created"
        assert send(second, "FETCH", "/a.md")[2] == "v2\n"


def test_directory_is_synced_after_the_link_swap(tmp_path):
    out = run_store(tmp_path, (
        "import stat\n"
        "events, real_fsync, real_replace = [], os.fsync, os.replace\n"
        "os.fsync = lambda fd: (events.append('dir' if stat.S_ISDIR(os.fstat(fd).st_mode) else 'file'), real_fsync(fd))\n"
        "os.replace = lambda *a: (events.append('swap'), real_replace(*a))\n"
        "publish('/a.md', 'v1', 0)\n"
        "print(events)\n"
    ))
    assert out.strip() == str(["file", "dir", "swap", "dir"])


def test_two_servers_on_one_root_lose_races_as_conflicts(tmp_path):
    root = tmp_path / "store"
    with serve(root, token=TOKEN, log=None) as one, serve(root, token=TOKEN, log=None) as two:
        publish(one, "/a.md", "v0\n", 0)
        answers = []

        def writer(server, name):
            version = 1
            for n in range(15):
                status, metadata, _ = publish(server, "/a.md", f"{name} {n}\n", version)
                answers.append(status)
                version = int(metadata.get("server-version", metadata.get("version", version)))

        together(*[lambda k=k, server=server: writer(server, f"w{k}") for k, server in enumerate([one, two, one, two])])
        assert set(answers) <= {"created", "conflict"}
        total = int(send(one, "VERSIONS", "/a.md")[1]["total"])
        assert answers.count("created") == total - 1
        assert send(two, "VERSIONS", "/a.md")[1]["chain-valid"] == "true"


# ------------------------------------------------- the store's own files

@pytest.mark.parametrize("attack", ["/team/plan.md.archived/x.md", "/team/plan.md.v2/x.md", "/team/.plan.md.x/y.md",
                                    "/team/future.md.v1/x.md"])
def test_store_files_are_unreachable_from_document_paths(server, attack):
    assert publish(server, "/team/plan.md", "v1\n", 0)[0] == "created"
    assert publish(server, attack, "x")[0] == "bad-request"
    assert send(server, "FETCH", "/team/plan.md")[0] == "ok"  # not archived, not wedged
    assert publish(server, "/team/plan.md", "v2\n", 1)[0] == "created"
    assert publish(server, "/team/future.md", "v1\n", 0)[0] == "created"


@pytest.mark.parametrize("path", ["/docs/a.md", "/docs/x/y/a.md"])
def test_link_planted_in_versions_writes_nothing_outside(server, tmp_path, path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "store" / "versions" / "docs").symlink_to(outside)
    assert publish(server, path, "x")[0] == "not-found"
    assert list(outside.iterdir()) == []  # not even a directory


def test_new_directories_are_synced_into_their_parents(tmp_path):
    out = run_store(tmp_path, (
        "synced, real_fsync = [], os.fsync\n"
        "os.fsync = lambda fd: (synced.append(os.readlink(f'/proc/self/fd/{fd}')), real_fsync(fd))\n"
        "publish('/a/b/c.md', 'x', 0)\n"
        "print('\\n'.join(sorted(set(synced))))\n"
    ))
    root = (tmp_path / "store").resolve()
    synced = set(out.split())
    for made in ("a", "a/b", "versions/a", "versions/a/b"):  # each new directory's entry, in its parent
        assert str((root / made).parent) in synced, made


def test_versions_reads_each_version_once(server, monkeypatch):
    for n in range(5):
        publish(server, "/a.md", f"v{n}\n", n)
    assert send(server, "VERSIONS", "/a.md")[1]["total"] == "5"
    publish(server, "/a.md", "v5\n", 5)
    read = []
    real = server.store.read_version
    monkeypatch.setattr(server.store, "read_version", lambda *args: (read.append(args), real(*args))[1])
    status, meta, body = send(server, "VERSIONS", "/a.md")
    assert (meta["total"], meta["chain-valid"], body.count("- [v")) == ("6", "true", 6)
    assert read == [("a.md", 6)]  # the new version, not the whole history again


def test_content_length_that_is_not_ascii_closes_the_connection(server):
    parts = urlsplit(server.url)
    smuggled = b"FETCH /health HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    for header in ("Content-Length: \u00b2".encode(), b"Content-Length: 5\r\nContent-Length: 5"):
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
            conn.sendall(b"PUBLISH /a.md HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n\r\n" + smuggled)
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
        assert answer.count(b"HTTP/1.1 200") == 1 and b"status: bad-request" in answer


def test_head_gets_no_body(server):
    parts = urlsplit(server.url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    connection.request("HEAD", "/a.md")
    reply = connection.getresponse()
    assert reply.status == 200 and reply.read() == b""
    connection.close()
    assert alive(server)


def test_ipv6_loopback(tmp_path):
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        running = serve(tmp_path / "store", host="::1", token=TOKEN, log=None)
    except OSError:
        pytest.skip("::1 is not configured here")
    with running:
        assert running.url.startswith("http://[::1]:") and alive(running)


def test_quiet_server_prints_no_traceback(tmp_path):
    script = (
        "import socket, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from mark_server import serve\n"
        f"with serve({str(tmp_path / 'store')!r}, token='t', log=None) as server:\n"
        "    host, port = server.server_address[:2]\n"
        "    for _ in range(20):  # connections that vanish mid-request\n"
        "        with socket.create_connection((host, port)) as conn:\n"
        "            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b'\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00')\n"
        "            conn.sendall(b'PUBLISH /a.md HTTP/1.1\\r\\nContent-Length: 10\\r\\n\\r\\nabc')\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stderr == ""


def test_log_lines_escape_the_method_and_never_echo_metadata(tmp_path):
    log = io.StringIO()
    with serve(tmp_path, token=TOKEN, log=log) as server:
        status, _, body = send(server, "PUBLISH", "/a.md", raw=b"---\nauth:s3cret-token\n---\nx")
        assert status == "bad-request" and "s3cret" not in body
        parts = urlsplit(server.url)
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
            conn.sendall(b"X\x1bY /a.md HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := conn.recv(65536):
                answer += chunk
            assert b"status: bad-request" in answer
    assert "s3cret" not in log.getvalue() and "\x1b" not in log.getvalue()


# ------------------------------------------------------ bounded resources

def test_connections_over_the_cap_are_closed_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(MarkServer, "MAX_CONNECTIONS", 4)
    with serve(tmp_path / "store", token=TOKEN, log=None) as server:
        parts = urlsplit(server.url)
        idle = [socket.create_connection((parts.hostname, parts.port), timeout=10) for _ in range(4)]
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=10) as extra:
                extra.sendall(b"FETCH /health HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
                try:
                    assert extra.recv(1024) == b""  # closed, not queued behind the idle four
                except ConnectionResetError:
                    pass
        finally:
            for conn in idle:
                conn.close()
        # The slots come back when the connections end: wait for all four
        # (each handler notices its client left on its own thread), then use one.
        for _ in range(4):
            assert server.slots.acquire(timeout=10)
        for _ in range(4):
            server.slots.release()
        assert alive(server)


def test_a_body_trickled_past_the_deadline_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(MarkServer, "REQUEST_DEADLINE", 1.0)
    with serve(tmp_path / "store", token=TOKEN, log=None) as server:
        raw = (write_frontmatter({"auth": TOKEN}) + "x" * 40).encode()
        parts = urlsplit(server.url)
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
            conn.sendall(f"PUBLISH /a.md HTTP/1.1\r\nContent-Length: {len(raw)}\r\n\r\n".encode() + raw[:-20])
            dropped = False
            for byte in raw[-20:]:  # bounded: a byte every 0.2 s, 4 s in all
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    dropped = True
                    break
                time.sleep(0.2)
            answer = b""
            try:
                while chunk := conn.recv(65536):
                    answer += chunk
            except OSError:
                pass
        assert dropped or b"status: bad-request" in answer
        assert send(server, "FETCH", "/a.md")[0] == "not-found"  # nothing stored


def test_a_request_line_trickled_past_the_deadline_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(MarkServer, "REQUEST_DEADLINE", 1.0)
    with serve(tmp_path / "store", token=TOKEN, log=None) as server:
        parts = urlsplit(server.url)
        with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
            try:
                for byte in b"FETCH /health HTTP/1.1\r\nX-Slow: " + b"y" * 10:  # 0.2 s a byte: 7 s, past 1 s
                    conn.sendall(bytes([byte]))
                    time.sleep(0.2)
                dropped = conn.recv(1024) == b""  # a server still waiting would time this out: an error
            except ConnectionError:
                dropped = True  # reset: what a dropped connection can look like from here too
            assert dropped
        assert alive(server)


def test_buffered_bodies_are_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(MarkServer, "MAX_BUFFERED", 1 << 20)
    with serve(tmp_path / "store", token=TOKEN, log=None) as server:
        assert publish(server, "/big.md", "x" * (2 << 20))[0] == "too-large"
        # Bodies that fit take turns: 3 writers of 600 KB each never hold more than 1 MiB.
        results = together(*[lambda n=n: publish(server, f"/w{n}.md", "y" * 600_000)[0] for n in range(3)])
        assert results == ["created"] * 3
        assert server.buffered.used == 0


# ---------------------------------------------------------------- rate limit

def test_over_the_rate_limit_http_answers_429_unread(tmp_path):
    log = io.StringIO()
    with serve(tmp_path / "store", token=TOKEN, log=log, rate_limit=0.1, rate_burst=2) as server:
        assert alive(server) and alive(server)  # the burst
        parts = urlsplit(server.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.request("PUBLISH", "/doc.md", body=b"x" * 100, headers={"Content-Length": "100"})
        reply = connection.getresponse()
        assert (reply.status, reply.getheader("Connection")) == (429, "close")
        assert 1 <= int(reply.getheader("Retry-After")) <= 10  # a token comes back every 10 s
        assert reply.read() == b""
        connection.close()
    assert "refused unread: over the rate limit" in log.getvalue()
    assert not (tmp_path / "store" / "doc.md").exists()


def test_over_the_rate_limit_quic_ends_the_stream_unanswered(tmp_path, monkeypatch):
    import mark_client
    from mark_client import MarkClient, MarkError

    monkeypatch.setattr(mark_client, "REFUSED_TRIES", 1)  # to see the refusal itself, not its retry
    with serve(tmp_path / "store", token=TOKEN, log=None, quic=True, rate_limit=0.1, rate_burst=2) as server:
        with MarkClient(server.mark_url, verify=False) as client:
            assert [client.fetch("/health").status for _ in range(2)] == ["ok", "ok"]
            with pytest.raises(MarkError, match="refused the last send without handling it .*, 1 send in all") as refused:
                client.fetch("/health")
    assert refused.value.status == "refused"


def test_a_refused_client_that_waits_gets_through(tmp_path):
    from mark_client import MarkClient

    with serve(tmp_path / "store", token=TOKEN, log=None, quic=True, rate_limit=20, rate_burst=1) as server:
        for url in (server.url, server.mark_url):
            with MarkClient(url, verify=False) as client:
                assert [client.fetch("/health").status for _ in range(5)] == ["ok"] * 5


def test_rate_limit_comes_from_the_environment_and_0_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv("DEMARKUS_RATE_LIMIT", "0")
    with serve(tmp_path / "store", token=TOKEN, log=None) as server:
        assert server.limit.rate == 0
        assert all(alive(server) for _ in range(150))  # past the default burst of 100
    monkeypatch.setenv("DEMARKUS_RATE_LIMIT", "7")
    monkeypatch.setenv("DEMARKUS_RATE_BURST", "3")
    with serve(tmp_path / "store", token=TOKEN, log=None) as server:
        assert (server.limit.rate, server.limit.burst) == (7, 3)
    monkeypatch.delenv("DEMARKUS_RATE_LIMIT")
    monkeypatch.delenv("DEMARKUS_RATE_BURST")
    with serve(tmp_path / "store", token=TOKEN, log=None) as server:
        assert (server.limit.rate, server.limit.burst) == (50, 100)  # the real server's defaults


@pytest.mark.parametrize("argv,word", [
    (["--rate-limit", "-1"], "rate_limit"), (["--rate-limit", "5", "--rate-burst", "0"], "rate_burst"),
    (["--rate-limit", "nan"], "rate_limit"),
])
def test_bad_rate_settings_are_refused_by_name(tmp_path, capsys, argv, word):
    from mark_server import main

    assert main(["--root", str(tmp_path / "store"), "--port", "0"] + argv) == 2
    assert word in capsys.readouterr().err


# ---------------------------------------------------------------- what start-up keeps

def three_versions(root):
    with serve(root, token=TOKEN, log=None) as server:
        for n in range(3):
            assert publish(server, "/a.md", f"v{n + 1}\n", n)[0] == "created"
    return sorted(p.name for p in (root / "versions").glob("a.md.v*"))


@pytest.mark.parametrize("spelling", ["absolute", "dot-slash"])
def test_a_link_spelled_otherwise_keeps_every_version(tmp_path, spelling):
    root = tmp_path / "store"
    files = three_versions(root)
    target = str(root / "versions" / "a.md.v3") if spelling == "absolute" else "./versions/a.md.v3"
    (root / "a.md").unlink()
    os.symlink(target, root / "a.md")
    log = io.StringIO()
    with serve(root, token=TOKEN, log=log) as server:
        assert sorted(p.name for p in (root / "versions").glob("a.md.v*")) == files
        status, meta, body = send(server, "FETCH", "/a.md")
        assert (status, meta["version"], body) == ("ok", "3", "v3\n")
        assert publish(server, "/a.md", "v4\n", 3)[0] == "created"
    assert "removed" not in log.getvalue()


def test_a_link_copied_as_a_file_becomes_a_link_again(tmp_path):
    root = tmp_path / "store"
    files = three_versions(root)
    data = (root / "a.md").read_bytes()  # what a backup tool that copies links as files leaves
    (root / "a.md").unlink()
    (root / "a.md").write_bytes(data)
    log = io.StringIO()
    with serve(root, token=TOKEN, log=log) as server:
        assert sorted(p.name for p in (root / "versions").glob("a.md.v*")) == files
        assert (root / "a.md").is_symlink() and send(server, "FETCH", "/a.md")[2] == "v3\n"
    assert "made /a.md a link to version 3 again" in log.getvalue()


def test_a_file_unlike_any_version_is_kept_and_so_are_the_versions(tmp_path):
    root = tmp_path / "store"
    files = three_versions(root)
    (root / "a.md").unlink()
    (root / "a.md").write_text("someone's notes\n")
    log = io.StringIO()
    with serve(root, token=TOKEN, log=log):
        assert sorted(p.name for p in (root / "versions").glob("a.md.v*")) == files
        assert (root / "a.md").read_text() == "someone's notes\n"
    assert "kept /a.md as it is" in log.getvalue()


def test_a_hand_rollback_is_served_and_the_newer_versions_kept(tmp_path):
    root = tmp_path / "store"
    files = three_versions(root)
    (root / "a.md").unlink()
    os.symlink("versions/a.md.v1", root / "a.md")  # back to version 1, by hand
    log = io.StringIO()
    with serve(root, token=TOKEN, log=log) as server:
        assert set(files) < {p.name for p in (root / "versions").glob("a.md.v*")}
        status, meta, body = send(server, "FETCH", "/a.md")
        assert (meta["version"], body) == ("4", "v1\n")  # the rollback, as a version of its own
        assert send(server, "FETCH", "/a.md/v3")[2] == "v3\n"
        assert send(server, "VERSIONS", "/a.md")[1]["chain-valid"] == "true"
    assert "a rollback; no version removed" in log.getvalue()


def test_every_file_the_sweep_removes_is_logged(tmp_path):
    root = tmp_path / "store"
    with serve(root, token=TOKEN, log=None) as first:
        publish(first, "/a.md", "v1\n", 0)
    (root / "versions" / "a.md.v2").write_text("---\nversion: \"2\"\n---\nhalf")
    log = io.StringIO()
    with serve(root, token=TOKEN, log=log):
        assert not (root / "versions" / "a.md.v2").exists()
    assert f"removed {root.resolve() / 'versions' / 'a.md.v2'}: a write that never completed" in log.getvalue()
