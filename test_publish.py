"""Unit tests of mark_publish.py against `responses`: no real network."""

import io
import re
import json

import pytest
import requests
import responses

import mark_client as mc
import mark_publish as mp
from mark_publish import (MarkClient, MarkError, MarkResponse, PublishResult,
                          mark_append, mark_publish, merge_and_publish)
from mark_sections import update_section

URL = "http://127.0.0.1:6309"
TOKEN = "s3cret-token"

BASE = "# Doc\n\nIntro.\n\nMiddle.\n\nEnd.\n"
OURS = "# Doc\n\nIntro, ours.\n\nMiddle.\n\nEnd.\n"
THEIRS = "# Doc\n\nIntro.\n\nMiddle.\n\nEnd, theirs.\n"
MERGED = "# Doc\n\nIntro, ours.\n\nMiddle.\n\nEnd, theirs.\n"


def mark(status, body="", **metadata):
    """A Mark response body as a real server writes it: keys sorted, values quoted."""
    metadata["status"] = status
    lines = "".join(f'{key.replace("_", "-")}: "{value}"\n' for key, value in sorted(metadata.items()))
    return f"---\n{lines}---\n{body}"


def conflict(your, current):
    return mark("conflict", "\n# Conflict\n\nsomeone published first\n", your_version=your, server_version=current)


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    """The merge loop's pauses between rounds are for real contention, not for these scripted answers."""
    monkeypatch.setattr(mp, "RETRY_PAUSE", 0)


@pytest.fixture
def mock():
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


@pytest.fixture
def client():
    with MarkClient(URL, token=TOKEN) as c:
        yield c


def add(mock, verb, path, body):
    mock.add(verb, URL + path, body=body, auto_calculate_content_length=True)


def sent(mock):
    """(verb, path, metadata, body) of each request, in order."""
    out = []
    for call in mock.calls:
        metadata, body = mc.read_frontmatter(call.request.body.decode()) if call.request.body else ({}, "")
        out.append((call.request.method, call.request.path_url, metadata, body))
    return out


# ------------------------------------------------------------ the loop

def test_clean_merge_request_sequence_and_shape(mock, client):
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v5", mark("ok", BASE, version=5, current_version=6))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))
    add(mock, "PUBLISH", "/p", mark("created", version=7))
    res = mark_publish(client, "/p", OURS, expected_version=5, on_conflict="merge")
    calls = sent(mock)
    assert [(v, p, m.get("expected-version")) for v, p, m, _ in calls] == [
        ("PUBLISH", "/p", "5"), ("FETCH", "/p/v6", None), ("FETCH", "/p/v5", None), ("PUBLISH", "/p", "6")]
    assert len(calls) == 4
    assert calls[3][3] == MERGED and calls[3][2]["auth"] == TOKEN
    assert res == PublishResult("ok", version=7, merged=True, base_version=5, their_version=6, body=MERGED)
    assert res.to_text() == (
        "status: ok\nversion: 7\nmerged: true\nbase-version: 5\ntheir-version: 6\n\n" + MERGED)


def test_success_on_second_try_does_not_refetch_base(mock, client):
    later = THEIRS.replace("Middle.", "Middle, third.")
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v5", mark("ok", BASE, version=5, current_version=6))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))
    add(mock, "PUBLISH", "/p", conflict(6, 7))
    add(mock, "FETCH", "/p/v7", mark("ok", later, version=7))  # not ours: the race was lost
    add(mock, "FETCH", "/p", mark("ok", later, version=7))  # after the pause: the newest version's number
    add(mock, "PUBLISH", "/p", mark("created", version=8))
    res = mark_publish(client, "/p", OURS, 5, on_conflict="merge")
    calls = sent(mock)
    assert [(v, p) for v, p, _, _ in calls[4:]] == [("FETCH", "/p/v7"), ("FETCH", "/p"), ("PUBLISH", "/p")]
    assert calls[-1][2]["expected-version"] == "7"
    assert calls[-1][3] == MERGED.replace("Middle.", "Middle, third.")
    assert (res.status, res.version, res.their_version, res.base_version) == ("ok", 8, 7, 5)


def test_retry_exhaustion_reports_contention(mock, client):
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v5", mark("ok", BASE, version=5, current_version=6))
    for n in (6, 7, 8):
        if n > 6:  # after a pause, the newest version's number; its body is the one just read
            add(mock, "FETCH", "/p", mark("ok", THEIRS + "x" * n, version=n))
        add(mock, "FETCH", f"/p/v{n}", mark("ok", THEIRS + "x" * n, version=n))
        add(mock, "PUBLISH", "/p", conflict(n, n + 1))
    # A last look at the version the last conflict names: is it our merge, stored after all?
    add(mock, "FETCH", "/p/v9", mark("ok", THEIRS, version=9))
    res = mark_publish(client, "/p", OURS, 5, on_conflict="merge", max_retries=3)
    assert len(mock.calls) == 11
    assert res.body is None
    assert res.to_text() == ("status: conflict\nyour-version: 5\ncurrent-version: 9\n"
                             "mergeable: false\nreason: contention\nretries: 3\n")


def test_overlap_returns_markers_and_publishes_nothing(mock, client):
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v5", mark("ok", BASE, version=5, current_version=6))
    add(mock, "FETCH", "/p/v6", mark("ok", BASE.replace("Intro.", "Intro, theirs."), version=6))
    res = mark_publish(client, "/p", OURS, 5, on_conflict="merge")
    assert [c[0] for c in sent(mock)] == ["PUBLISH", "FETCH", "FETCH"]
    assert (res.status, res.your_version, res.current_version, res.mergeable) == ("conflict", 5, 6, False)
    assert "<<<<<<< ours\nIntro, ours.\n=======\nIntro, theirs.\n>>>>>>> theirs\n" in res.body
    assert res.to_text() == ("status: conflict\nyour-version: 5\ncurrent-version: 6\nmergeable: false\n\n"
                             + res.body)


def test_expected_version_zero_against_existing_document(mock, client):
    add(mock, "PUBLISH", "/p", conflict(0, 3))
    add(mock, "FETCH", "/p/v3", mark("ok", THEIRS, version=3))
    res = mark_publish(client, "/p", OURS, 0, on_conflict="merge")
    assert [(c[0], c[1]) for c in sent(mock)] == [("PUBLISH", "/p"), ("FETCH", "/p/v3")]
    assert res.status == "conflict" and res.mergeable is False and "<<<<<<< ours\n" in res.body


def test_fail_mode_reads_the_current_version_and_publishes_nothing_more(mock, client):
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))
    res = mark_publish(client, "/p", OURS, 5)
    assert [(verb, path) for verb, path, _, _ in sent(mock)] == [("PUBLISH", "/p"), ("FETCH", "/p/v6")]
    assert res == PublishResult("conflict", your_version=5, current_version=6)
    assert res.to_text() == "status: conflict\nyour-version: 5\ncurrent-version: 6\n"


@pytest.mark.parametrize("mode", ["fail", "candidate", "merge"])
def test_a_named_version_that_is_never_given_raises_naming_it(mock, client, mode):
    # It may hold our write: this answered `conflict` (fail) as if nothing of ours had landed.
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v6", mark("archived", "\n# Archived\n\n/p is archived\n"))
    with pytest.raises(MarkError, match="version 6, which may be this call's write") as caught:
        mark_publish(client, "/p", OURS, 5, on_conflict=mode)
    assert (caught.value.status, caught.value.may_have_landed) == ("archived", True)
    assert caught.value.metadata == {"unread-version": "6"}
    assert [(verb, path) for verb, path, *_ in sent(mock)] == [("PUBLISH", "/p")] + [("FETCH", "/p/v6")] * mp.READS


@pytest.mark.parametrize("mode", ["fail", "merge"])
def test_conflict_with_own_landed_body_is_ok(mock, client, mode):
    # A retry of a publish whose answer was lost: the server holds this body already.
    # Every mode asks that before it needs the base: merge mode reads no base for it.
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v6", mark("ok", OURS, version=6))
    res = mark_publish(client, "/p", OURS, 5, on_conflict=mode)
    assert res == PublishResult("ok", version=6, merged=False)
    assert [(verb, path) for verb, path, *_ in sent(mock)] == [("PUBLISH", "/p"), ("FETCH", "/p/v6")]


@pytest.mark.parametrize("status", ["created", "ok"])
def test_publish_without_conflict(mock, client, status):
    add(mock, "PUBLISH", "/p", mark(status, version=6))
    res = mark_publish(client, "/p", OURS, 5, on_conflict="merge")
    assert res.to_text() == "status: ok\nversion: 6\nmerged: false\n" and res.body is None


def test_base_version_cache_is_bounded_and_reused(mock, client):
    add(mock, "FETCH", "/p/v1", mark("ok", "one", version=1))
    for _ in range(3):
        assert client.fetch("/p", version=1).body == "one"
    assert len(mock.calls) == 1
    for n in range(2, mc.CACHED_VERSIONS + 2):
        add(mock, "FETCH", f"/p/v{n}", mark("ok", str(n), version=n))
        client.fetch("/p", version=n)
    assert len(mock.calls) == mc.CACHED_VERSIONS + 1
    client.fetch("/p", version=mc.CACHED_VERSIONS + 1)  # still kept
    assert len(mock.calls) == mc.CACHED_VERSIONS + 1
    assert client.fetch("/p", version=1).body == "one"  # the least recently used went first
    assert len(mock.calls) == mc.CACHED_VERSIONS + 2


def test_merge_and_publish_directly(mock, client):
    add(mock, "FETCH", "/p", mark("ok", "the body the real server may pair with v6\n", version=6))
    add(mock, "FETCH", "/p/v5", mark("ok", BASE, version=5, current_version=6))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))
    add(mock, "PUBLISH", "/p", mark("created", version=7))
    res = merge_and_publish(client, "/p", OURS, 5, metadata={"title": "x"})
    assert res.version == 7 and sent(mock)[-1][2]["title"] == "x"


# ------------------------------------------------------------ mark_append

def test_append_reads_version_first_and_never_merges(mock, client):
    add(mock, "VERSIONS", "/log", mark("ok", total=4, current=4, chain_valid="true"))
    add(mock, "APPEND", "/log", conflict(4, 5))
    res = mark_append(client, "/log", "entry")
    assert [(c[0], c[2].get("expected-version")) for c in sent(mock)] == [("VERSIONS", None), ("APPEND", "4")]
    assert res.to_text() == "status: conflict\nyour-version: 4\ncurrent-version: 5\n"


def test_append_ok(mock, client):
    add(mock, "APPEND", "/log", mark("created", version=8))
    assert mark_append(client, "/log", "entry", expected_version=7).to_text() == (
        "status: ok\nversion: 8\nmerged: false\n")


# ------------------------------------------------------------ errors

BAD = [
    (dict(path="p"), ValueError, "path"),
    (dict(path=b"/p"), TypeError, "path"),
    (dict(path="/a\x00b"), ValueError, "path"),
    (dict(path="/a\nb"), ValueError, "path"),
    (dict(body=None), TypeError, "body"),
    (dict(expected_version=-1), ValueError, "expected_version"),
    (dict(expected_version=True), TypeError, "expected_version"),
    (dict(expected_version="5"), TypeError, "expected_version"),
    (dict(on_conflict="retry"), ValueError, "on_conflict"),
    (dict(max_retries=0), ValueError, "max_retries"),
    (dict(max_retries=2.0), TypeError, "max_retries"),
]


@pytest.mark.parametrize("change,error,word", BAD)
def test_bad_input_sends_nothing(mock, client, change, error, word):
    args = dict(path="/p", body="x", expected_version=1, on_conflict="merge", max_retries=3)
    args.update(change)
    with pytest.raises(error, match=word):
        mark_publish(client, **args)
    assert len(mock.calls) == 0


@pytest.mark.parametrize("change,error,word", [
    (dict(body=""), ValueError, "body"), (dict(body=3), TypeError, "body"),
    (dict(expected_version=-2), ValueError, "expected_version"), (dict(path="x"), ValueError, "path"),
])
def test_bad_append_sends_nothing(mock, client, change, error, word):
    args = dict(path="/p", body="x", expected_version=1)
    args.update(change)
    with pytest.raises(error, match=word):
        mark_append(client, **args)
    assert len(mock.calls) == 0


@pytest.mark.parametrize("kwargs,error,word", [
    (dict(base_url="ftp://host"), ValueError, "base_url"),
    (dict(base_url=5), TypeError, "base_url"),
    (dict(base_url="http://u:p@127.0.0.1"), ValueError, "base_url"),
    (dict(timeout=0), ValueError, "timeout"),
    (dict(token=""), TypeError, "token"),
    (dict(base_url="http://example.com", token=TOKEN), ValueError, "http"),
])
def test_bad_client_arguments(kwargs, error, word):
    args = dict(base_url=URL, token=None)
    args.update(kwargs)
    with pytest.raises(error, match=word) as info:
        MarkClient(**args)
    assert TOKEN not in str(info.value)


@pytest.mark.parametrize("host", ["http://localhost:1", "http://127.8.0.1", "http://[::1]:80", "https://example.com"])
def test_token_allowed_on_loopback_and_https(host):
    client = MarkClient(host, token=TOKEN)
    assert (client.base_url, repr(client)) == (host, f"MarkClient({host!r}, token=<set>)")


def test_insecure_http_needs_explicit_consent():
    with pytest.raises(ValueError, match="allow_insecure_http"):
        MarkClient("http://10.0.0.2", token=TOKEN)
    assert MarkClient("http://10.0.0.2", token=TOKEN, allow_insecure_http=True).base_url == "http://10.0.0.2"


def test_token_never_in_repr_url_or_error(mock):
    client = MarkClient(URL, token=TOKEN)
    assert TOKEN not in repr(client)
    add(mock, "PUBLISH", "/p", mark("unauthorized", "\n# Unauthorized\n\nbad token\n"))
    with pytest.raises(MarkError) as info:
        mark_publish(client, "/p", "x", 1)
    assert TOKEN not in str(info.value) and TOKEN not in repr(info.value)
    assert TOKEN not in mock.calls[0].request.url
    assert info.value.status == "unauthorized" and "bad token" in info.value.message


@pytest.mark.parametrize("status", ["not-found", "not-permitted", "archived", "bad-request", "server-error"])
def test_error_status_mid_loop_raises_and_publishes_nothing_more(mock, client, status):
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v6", mark(status, "\n# Oops\n\nthe reason\n", detail="d"))
    with pytest.raises(MarkError) as info:
        mark_publish(client, "/p", OURS, 5, on_conflict="merge")
    # v6 may be our write: the error says so, and names it, before any base is read
    assert (info.value.status, info.value.may_have_landed, info.value.metadata) == (status, True, {"unread-version": "6"})
    assert "the reason" in str(info.value)
    assert [c[0] for c in sent(mock)] == ["PUBLISH"] + ["FETCH"] * mp.READS


def test_missing_base_version_is_a_structured_conflict(mock, client):
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))  # not ours: nothing to put back
    add(mock, "FETCH", "/p/v5", mark("not-found", "\n# Not found\n\n/p/v5 not found\n"))
    add(mock, "FETCH", "/p", mark("ok", THEIRS, version=6))
    res = mark_publish(client, "/p", OURS, 5, on_conflict="merge")
    assert res.to_text() == ("status: conflict\nyour-version: 5\ncurrent-version: 6\n"
                             "mergeable: false\nreason: base-unavailable\n")
    assert [verb for verb, *_ in sent(mock)].count("PUBLISH") == 1


def test_merge_publish_rejected(mock, client):
    add(mock, "FETCH", "/p", mark("ok", THEIRS, version=6))
    add(mock, "FETCH", "/p/v5", mark("ok", BASE, version=5))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))
    add(mock, "PUBLISH", "/p", mark("archived", ""))
    with pytest.raises(MarkError, match="archived"):
        merge_and_publish(client, "/p", OURS, 5)


@pytest.mark.parametrize("reply,word", [
    (dict(status=502, body="Bad gateway"), "HTTP 502"),
    (dict(status=200, body="<html>hello</html>"), "not a Mark response"),
    (dict(status=200, body="---\nversion: 1\n---\n"), "not a Mark response"),
    (dict(status=200, body=b"---\nstatus: ok\n---\n\xff"), "not a Mark response"),
    (dict(body=requests.ConnectionError("refused")), "ConnectionError"),
    (dict(body=requests.Timeout("slow")), "Timeout"),
])
def test_transport_failures(mock, client, reply, word):
    mock.add("FETCH", URL + "/p", **reply)
    with pytest.raises(MarkError, match=word) as info:
        client.fetch("/p")
    assert info.value.status == "transport"
    if "HTTP" in word:
        assert URL + "/p" in str(info.value)


def test_transport_failure_mid_loop(mock, client):
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))
    mock.add("FETCH", URL + "/p/v5", body=requests.ConnectionError("gone"))
    with pytest.raises(MarkError, match="transport"):
        mark_publish(client, "/p", OURS, 5, on_conflict="merge")


def test_missing_version_field_is_a_clear_error(mock, client):
    add(mock, "PUBLISH", "/p", mark("created"))
    with pytest.raises(MarkError, match="version"):
        mark_publish(client, "/p", "x", 1)


# ------------------------------------------------------------ wire format

@pytest.mark.parametrize("value", [
    "plain", "", "a # not a comment", "key: value", '"quoted"', "'single'", "back\\slash",
    "tab\there", "line\nbreak", "\x00\x01\x1f\x7f\x85\x9f", "\ufeff\ufffe\uffff", "caf\u00e9 \u4e2d",
    "rocket \U0001F680", "true", "null", "007", " leading", "trailing ", "- dash", "[x]", "{y}",
])
def test_frontmatter_round_trip(value):
    text = mc.write_frontmatter({"k": value, "auth": "t"}) + "body"
    assert mc.read_frontmatter(text) == ({"k": value, "auth": "t"}, "body")
    assert "\ud83d" not in text  # no surrogate pairs, as json.dumps would write


def test_writer_escapes_like_yaml():
    assert mc.write_scalar("a\"b\\c\x85\U0001F680\ufeff") == '"a\\"b\\\\c\\x85\\U0001f680\\ufeff"'
    assert mc.write_frontmatter({}) == "---\n\n---\n"
    assert mc.write_frontmatter({"b": "1", "a": "x"}) == '---\na: x\nb: "1"\n---\n'


@pytest.mark.parametrize("bad", [{"a b": "x"}, {"": "x"}, {"k": 1}])
def test_writer_rejects_bad_metadata(bad):
    with pytest.raises((ValueError, TypeError)):
        mc.write_frontmatter(bad)


@pytest.mark.parametrize("line,value", [
    ("version: 7", "7"), ('version: "7"', "7"), ("version: '7'", "7"), ("k: 'it''s'", "it's"),
    ('"1": x', None), ("k: plain # comment", "plain"), ("k:", ""), ('k: "\\t\\n\\r\\0\\a\\b\\v\\f\\e"', "\t\n\r\0\a\b\v\f\x1b"),
    ('k: "\\" \\/ \\\\ \\N \\_ \\L \\P"', '" / \\ \x85 \xa0 \u2028 \u2029'),
    ('k: "\\x41\\u00e9\\U0001F680"', "A\u00e9\U0001F680"), ("k: a: b", "a: b"),
])
def test_reader_accepts_real_quoting(line, value):
    metadata, body = mc.read_frontmatter(f"---\n{line}\n---\nrest")
    assert body == "rest"
    if value is None:
        assert metadata == {"1": "x"}
    else:
        assert metadata == {"k" if not line.startswith("version") else "version": value}


@pytest.mark.parametrize("text", [
    "no frontmatter", "---\nk: v\n", "---\nk: |\n  block\n---\n", "---\nk: [a, b]\n---\n",
    "---\n  nested: x\n---\n", '---\nk: "open\n---\n', "---\nk: 'open\n---\n", '---\nk: "\\q"\n---\n',
    '---\nk: "\\x4"\n---\n', '---\nk: "a" b\n---\n', "---\nnot a pair\n---\n", "---\nk:v\n---\n",
])
def test_reader_rejects_what_it_cannot_read(text):
    with pytest.raises(ValueError):
        mc.read_frontmatter(text)


def test_body_starting_with_dashes_survives_both_ways(mock, client):
    body = "---\ntitle: not metadata\n---\n# Real body\n"
    add(mock, "PUBLISH", "/p", mark("created", version=1))
    add(mock, "FETCH", "/p", mark("ok", body, version=1))  # checked against v1, which this client wrote
    client.publish("/p", body, expected_version=0)
    assert sent(mock)[0][3] == body
    assert client.fetch("/p").body == body


def test_a_version_this_client_published_is_known_without_a_fetch(mock, client):
    doc = "# Doc\n\n## A\n\na\n\n## B\n\nb\n"
    add(mock, "PUBLISH", "/p", mark("created", version=1))
    add(mock, "PUBLISH", "/p", mark("created", version=2))
    client.publish("/p", doc, expected_version=0, metadata={"title": "T"})
    assert client.fetch("/p", version=1) == MarkResponse("ok", {"title": "T", "version": "1"}, doc)
    res = update_section(client, "/p", "## B", "## B\n\nb, again\n", expected_version=1)
    assert (res.status, res.version) == ("ok", 2)
    assert [(verb, path, body) for verb, path, _, body in sent(mock)] == [
        ("PUBLISH", "/p", doc), ("PUBLISH", "/p", doc.replace("b\n", "b, again\n"))]  # no FETCH at all


def test_request_without_token_or_body_sends_empty_payload(mock):
    add(mock, "FETCH", "/a%20b.md", mark("ok", "x", version=1))
    response = MarkClient(URL).request("FETCH", "/a b.md")
    assert mock.calls[0].request.body in (None, b"")
    assert response == MarkResponse("ok", {"version": "1"}, "x")


# ------------------------------------------------------------ CLI

def test_cli_merge(mock, monkeypatch, capsysbinary, tmp_path):
    monkeypatch.setenv("MARK_TOKEN", TOKEN)
    body = tmp_path / "doc.md"
    body.write_text(OURS)
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v5", mark("ok", BASE, version=5))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))
    add(mock, "PUBLISH", "/p", mark("created", version=7))
    code = mp.main(["--server", URL, "/p", "--expected-version", "5", "--on-conflict", "merge",
                    "--file", str(body)])
    assert code == 0
    assert capsysbinary.readouterr().out.decode().startswith("status: ok\nversion: 7\nmerged: true\n")
    assert sent(mock)[0][2]["auth"] == TOKEN


def test_cli_conflict_from_stdin(mock, monkeypatch, capsysbinary):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(OURS.encode())))
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))
    assert mp.main(["--server", URL, "/p", "--expected-version", "5"]) == 1
    assert capsysbinary.readouterr().out == b"status: conflict\nyour-version: 5\ncurrent-version: 6\n"


def test_cli_candidate_prints_the_merge_and_publishes_nothing(mock, monkeypatch, capsysbinary):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(OURS.encode())))
    add(mock, "PUBLISH", "/p", conflict(5, 6))
    add(mock, "FETCH", "/p/v6", mark("ok", THEIRS, version=6))
    add(mock, "FETCH", "/p/v5", mark("ok", BASE, version=5))
    assert mp.main(["--server", URL, "/p", "--expected-version", "5", "--on-conflict", "candidate"]) == 1
    assert capsysbinary.readouterr().out.decode() == (
        "status: merge-candidate\nyour-version: 5\ncurrent-version: 6\npublish-at-version: 6\n"
        "has-markers: false\n\n" + MERGED)
    assert [verb for verb, *_ in sent(mock)].count("PUBLISH") == 1


def test_cli_help_explains_every_option(capsys):
    with pytest.raises(SystemExit):
        mp.main(["--help"])
    shown = capsys.readouterr().out
    for option in ("--server", "--insecure", "--expected-version", "--on-conflict", "--section", "--max-retries",
                   "--file", "--timeout"):  # each with words after it: on its line, or on the next
        assert re.search(rf"^  {option}( \S+)?  +\w|^  {option}.*\n {{20,}}\w", shown, re.M), option


@pytest.mark.parametrize("argv,word", [
    (["--server", URL, "/p", "--expected-version", "-1"], "expected_version"),
    (["--server", URL, "/p", "--expected-version", "1", "--file", "/nonexistent/x"], "No such file"),
    (["--server", "ftp://x", "/p", "--expected-version", "1", "--file", __file__], "base_url"),
])
def test_cli_errors(mock, capsysbinary, monkeypatch, argv, word):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x")))
    assert mp.main(argv) == 2
    captured = capsysbinary.readouterr()
    assert captured.out == b"" and word in captured.err.decode() and captured.err.count(b"\n") == 1


@pytest.mark.parametrize("answer", [
    mark("created", version=6, content_hash="sha256-" + "0" * 64),  # the answer came back garbled
    mark("created"),  # no version number to tell where it went
], ids=["content-hash-mismatch", "no-version"])
def test_a_write_whose_answer_cannot_be_believed_may_have_landed(mock, client, answer):
    add(mock, "PUBLISH", "/p", answer)
    with pytest.raises(MarkError) as caught:
        client.publish("/p", OURS, 5)
    assert caught.value.status == "transport" and caught.value.may_have_landed  # fetch before retrying
