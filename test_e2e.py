"""mark_publish.py against mark_server.py: real sockets, real threads, 127.0.0.1 only."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from mark_publish import MarkClient, MarkError, mark_append, mark_publish
from mark_server import serve
from testkit import add_line, replace_line, sectioned_document, together, write_rounds

TOKEN = "e2e-token"
PATH = "/shared.md"


def client(server, **kwargs):
    return MarkClient(server.url, token=TOKEN, **kwargs)


def seed(server, writers):
    text = sectioned_document(writers)
    assert client(server).publish(PATH, text, expected_version=0).status == "created"
    return text


def test_disjoint_sections_both_land(server):
    base = seed(server, ["A", "B"])
    a_body, b_body = add_line(base, "A", "A's edit"), add_line(base, "B", "B's edit")
    ca, cb = client(server), client(server)
    results = together(lambda: mark_publish(ca, PATH, a_body, 1, on_conflict="merge"),
                       lambda: mark_publish(cb, PATH, b_body, 1, on_conflict="merge"))
    assert [r.status for r in results] == ["ok", "ok"]
    merged = [r for r in results if r.merged]
    assert len(merged) == 1 and (merged[0].base_version, merged[0].their_version, merged[0].version) == (1, 2, 3)
    final = ca.fetch(PATH).body
    assert "A's edit" in final and "B's edit" in final and final == merged[0].body


def test_same_line_loser_gets_markers_and_publishes_nothing(server):
    base = seed(server, ["A", "B"])
    mine, yours = replace_line(base, "A's intro.", "Mine."), replace_line(base, "A's intro.", "Yours.")
    results = together(lambda: mark_publish(client(server), PATH, mine, 1, on_conflict="merge"),
                       lambda: mark_publish(client(server), PATH, yours, 1, on_conflict="merge"))
    loser = next(r for r in results if r.status == "conflict")
    assert loser.mergeable is False and loser.your_version == 1 and loser.current_version == 2
    assert "<<<<<<< ours\n" in loser.body and "\n=======\n" in loser.body and "\n>>>>>>> theirs\n" in loser.body
    assert client(server).versions(PATH).metadata["total"] == "2"


def test_three_writers_from_one_base(server):
    writers = ["A", "B", "C"]
    base = seed(server, writers)
    calls = [lambda w=w: mark_publish(client(server), PATH, add_line(base, w, f"{w} was here"), 1,
                                      on_conflict="merge") for w in writers]
    results = together(*calls)
    # Each failed attempt means another writer landed, and each lands once:
    # with three attempts, all three writers land.
    assert [r.status for r in results] == ["ok"] * 3
    final = client(server).fetch(PATH).body
    assert all(f"{writer} was here" in final for writer in writers)


def test_stress_nothing_lost_silently(server, capsys):
    writers = [f"W{n}" for n in range(8)]
    seed(server, writers)

    def work(writer):
        with client(server) as c:
            return write_rounds(c, PATH, writer, 10, lambda *args: mark_publish(*args, on_conflict="merge"))

    outcomes = [outcome for rounds in together(*[lambda w=w: work(w) for w in writers]) for outcome in rounds]
    landed = [line for line, result, _ in outcomes if result.status == "ok"]
    reported = [(line, result.reason or "overlap") for line, result, _ in outcomes if result.status != "ok"]
    final = client(server).fetch(PATH).body
    lost = [line for line in landed if f"\n{line}\n" not in final]
    with capsys.disabled():
        print(f"\nstress: {len(landed)} edits landed, {len(reported)} reported back "
              f"({sorted(set(r for _, r in reported))}), {len(lost)} lost")
    assert len(landed) + len(reported) == 80 and lost == []
    assert all(reason == "contention" for _, reason in reported)  # own sections never overlap
    assert all(f"\n{line}\n" not in final for line, _ in reported)
    assert client(server).versions(PATH).metadata["chain-valid"] == "true"


def test_fail_mode_is_one_publish_and_a_fetch(server):
    seed(server, ["A"])
    client(server).publish(PATH, "someone else\n", expected_version=1)
    session = requests.Session()
    sent = []
    session.hooks["response"].append(lambda response, *a, **k: sent.append(response.request.method))
    result = mark_publish(client(server, session=session), PATH, "mine\n", 1)
    assert (result.status, result.current_version, result.merged, sent) == ("conflict", 2, None, ["PUBLISH", "FETCH"])


def test_a_path_holding_a_hash_is_one_document(server):
    sent = []
    session = requests.Session()
    session.hooks["response"].append(lambda response, *a, **k: sent.append(response.request.path_url))
    writer = client(server, session=session)
    assert writer.publish("/a#b.md", "hash\n", 0).status == "created"
    assert writer.publish("/a.md", "plain\n", 0).status == "created"  # what the name would be cut to
    page = client(server).fetch("/a#b.md")
    assert (page.status, page.number("version"), page.body) == ("ok", 1, "hash\n")
    assert sent == ["/a%23b.md", "/a.md"]  # "#" percent-encoded on the wire: part of the path, not a fragment
    assert client(server).fetch("/a.md").body == "plain\n"


def test_concurrent_appends_serialize(server):
    client(server).publish("/log.md", "log", expected_version=0)
    texts = [f"entry {n}" for n in range(4)]

    def append(text):
        with client(server) as c:
            while True:
                result = mark_append(c, "/log.md", text)
                if result.status == "ok":
                    return result
                assert f"\n{text}" not in c.fetch("/log.md").body  # lost the race: not written

    results = together(*[lambda t=t: append(t) for t in texts])
    assert sorted(r.version for r in results) == [2, 3, 4, 5] and not any(r.merged for r in results)
    final = client(server).fetch("/log.md").body.split("\n")
    assert final[0] == "log" and sorted(final[1:]) == texts


def test_server_stopping_mid_loop_raises_and_writes_nothing(tmp_path):
    store = tmp_path / "store"
    server = serve(store, token=TOKEN, log=None)
    base = seed(server, ["A", "B"])
    client(server).publish(PATH, add_line(base, "B", "theirs"), expected_version=1)

    class StopsServer(MarkClient):
        def fetch(self, path, version=None):
            response = super().fetch(path, version)
            if version == 2:
                server.close()  # after the base and the latest were read, before the publish
            return response

    with pytest.raises(MarkError) as info:
        mark_publish(StopsServer(server.url, token=TOKEN), PATH, add_line(base, "A", "ours"), 1,
                     on_conflict="merge")
    assert info.value.status == "transport" and TOKEN not in str(info.value)
    with serve(store, token=TOKEN, log=None) as restarted:
        versions = client(restarted).versions(PATH).metadata
        assert (versions["total"], versions["chain-valid"]) == ("2", "true")
        assert "ours" not in client(restarted).fetch(PATH).body


def test_client_timeout_raises(tmp_path):
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(MarkError, match="within the timeout") as info:
            mark_publish(MarkClient(url, token=TOKEN, timeout=0.3), PATH, "x", 1)
        assert info.value.status == "transport"


def test_demo_command_runs():
    run = subprocess.run([sys.executable, "demo.py"], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).parent)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("status: ok") == 2 and run.stdout.count("status: conflict") == 1
    assert "Bob adds a point." in run.stdout.split("=== /notes.md")[1]


def test_demo_with_agents_over_quic_runs():
    pytest.importorskip("aioquic")
    pytest.importorskip("mcp")
    run = subprocess.run([sys.executable, "demo.py", "--quic", "--mcp"], capture_output=True, text=True,
                         timeout=60, cwd=Path(__file__).parent)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("server: mark://127.0.0.1:")
    # The first to land needed no merge (the server's own answer), the next one merged, one overlapped.
    assert [run.stdout.count(f"status: {s}") for s in ("created", "ok", "conflict")] == [1, 1, 1]
    assert "Bob adds a point." in run.stdout.split("=== /notes.md")[1]


def test_demo_of_section_writes_runs():
    run = subprocess.run([sys.executable, "demo.py", "--sections"], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).parent)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("status: ok") == 4 and run.stdout.count("merged: false") == 4
    final = run.stdout.split("=== /notes.md")[1]
    for name in ("Alice", "Bob", "Carol", "Dave"):
        assert f"{name}'s intro, rewritten.\n{name} adds a point.\n" in final


def test_candidate_merges_and_publishes_nothing(server):
    base = seed(server, ["A", "B"])
    c = client(server)
    assert c.publish(PATH, add_line(base, "B", "B's edit"), 1).status == "created"
    clean = mark_publish(c, PATH, add_line(base, "A", "A's edit"), 1, on_conflict="candidate")
    assert (clean.status, clean.publish_at_version, clean.has_markers) == ("merge-candidate", 2, False)
    assert "A's edit" in clean.body and "B's edit" in clean.body
    clash = mark_publish(c, PATH, add_line(base, "B", "B's other edit"), 1, on_conflict="candidate")
    assert (clash.has_markers, "<<<<<<< ours" in clash.body) == (True, True)
    assert c.fetch(PATH).metadata["version"] == "2"  # nothing published
    assert mark_publish(c, PATH, clean.body, clean.publish_at_version).status == "ok"
    gone = mark_publish(c, PATH, "x\n", 7, on_conflict="candidate")
    assert (gone.status, gone.reason) == ("conflict", "base-unavailable")
