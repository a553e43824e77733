"""mark_mcp.py driven by the MCP SDK's own client, against the reference server on 127.0.0.1.

The texts below are what the real demarkus-mcp answered
(../shared/real-demarkus/mcp-demarkus-mcp.txt), timestamps and hashes aside.
"""

import json
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from mark_mcp import MARK_PUBLISH_TOOL, create_server  # noqa: E402
from mark_server import serve  # noqa: E402
from testkit import add_line, replace_line, sectioned_document  # noqa: E402

TOKEN = "mcp-secret-token"
DOC = "/notes.md"


def calls(mcp_server, *steps):
    """Run (tool, arguments) steps through one MCP client; their results."""
    async def run():
        async with Client(mcp_server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in steps]

    return anyio.run(run)


def text(result) -> str:
    assert len(result.content) == 1
    return result.content[0].text


def unstamped(answer: str) -> str:
    """An answer with its timestamps and hashes replaced, as the recording is compared."""
    answer = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "TIME", answer)
    return re.sub(r"[0-9a-f]{64}", "HASH", answer)


# --------------------------------------------------- the recorded session

RECORDED_SCHEMAS = {
    "mark_append": {"properties": {"body": {"description": "markdown content to append", "type": "string"}, "expected_version": {"description": "version number from a prior fetch for conflict detection; when omitted or 0, resolved via VERSIONS", "type": "number"}, "url": {"description": "bare path, e.g. /index.md or /docs/", "type": "string"}}, "required": ["url", "body"], "type": "object"},  # noqa: E501
    "mark_archive": {"properties": {"url": {"description": "bare path, e.g. /index.md or /docs/", "type": "string"}}, "required": ["url"], "type": "object"},  # noqa: E501
    "mark_fetch": {"properties": {"url": {"description": "bare path, e.g. /index.md or /docs/", "type": "string"}}, "required": ["url"], "type": "object"},  # noqa: E501
    "mark_list": {"properties": {"url": {"description": "bare path, e.g. /index.md or /docs/", "type": "string"}}, "required": ["url"], "type": "object"},  # noqa: E501
    "mark_publish": {"properties": {"body": {"description": "markdown content to publish", "type": "string"}, "expected_version": {"description": "version number from a prior fetch for conflict detection; use 0 when creating a new document", "type": "number"}, "url": {"description": "bare path, e.g. /index.md or /docs/", "type": "string"}}, "required": ["url", "body", "expected_version"], "type": "object"},  # noqa: E501
    "mark_versions": {"properties": {"url": {"description": "bare path, e.g. /index.md or /docs/", "type": "string"}}, "required": ["url"], "type": "object"},  # noqa: E501
}

STALE = ("status: conflict\nserver-version: 2\nyour-version: 1\n\n# Version Conflict\n\n"
         "The document has been modified since you last fetched it.\n\nYour version: 1\nServer version: 2\n\n"
         "Please fetch the latest version and reapply your edits.\n")
# (tool, arguments, the real demarkus-mcp's answer with TIME and HASH for what varies)
SESSION = [
    ("mark_fetch", {"url": DOC}, "status: not-found\n\n\n# Not found\n\n/notes.md not found\n"),
    ("mark_publish", {"url": DOC, "body": "# Notes\n\none\n", "expected_version": 0},
     "status: created\nversion: 1\nmodified: TIME\n"),
    ("mark_publish", {"url": DOC, "body": "# Notes\n\ntwo\n", "expected_version": 1},
     "status: created\nversion: 2\nmodified: TIME\n"),
    ("mark_publish", {"url": DOC, "body": "# Notes\n\nstale\n", "expected_version": 1}, STALE),
    ("mark_publish", {"url": DOC, "body": "# Notes\n\nagain\n", "expected_version": 0},
     "status: conflict\nserver-version: 2\nyour-version: 0\n\n# Version Conflict\n\n"
     "A document already exists at this path (version 2).\n\n"
     "Fetch the current version and publish with the correct expected-version to update it.\n"),
    ("mark_publish", {"url": DOC, "body": "# Notes\n\ntwo\n", "expected_version": 2},
     "status: ok\nversion: 2\nmodified: TIME\n"),
    ("mark_append", {"url": DOC, "body": "tail\n"}, "status: created\nversion: 3\nmodified: TIME\n"),
    ("mark_append", {"url": DOC, "body": "late\n", "expected_version": 2},
     "status: conflict\nserver-version: 3\nyour-version: 2\n\n# Version Conflict\n\n"
     "The document has been modified since you last fetched it.\n\nYour version: 2\nServer version: 3\n\n"
     "Fetch the latest version and verify whether your append was applied before retrying.\n"),
    ("mark_fetch", {"url": DOC},
     "status: ok\nversion: 3\nmodified: TIME\netag: HASH\ncontent-hash: sha256-HASH\nagent: mcp\n\n"
     "# Notes\n\ntwo\ntail\n"),
    ("mark_versions", {"url": DOC},
     "status: ok\ntotal: 3\ncurrent: 3\nchain-valid: true\n\n\n# Version History: /notes.md\n\n"
     "- [v3](%2Fnotes.md/v3) - TIME\n- [v2](%2Fnotes.md/v2) - TIME\n- [v1](%2Fnotes.md/v1) - TIME\n"),
    ("mark_list", {"url": "/"}, "status: ok\nentries: 1\n\n\n# Index of /\n\n- [notes.md](notes.md)\n"),
]


def test_tools_have_demarkus_mcps_names_and_parameters(server):
    async def run():
        async with Client(create_server(server.url, TOKEN)) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool.input_schema for tool in anyio.run(run)}
    assert set(tools) == set(RECORDED_SCHEMAS) | {"mark_update_section"}  # the one tool demarkus-mcp lacks
    assert tools["mark_update_section"]["required"] == ["url", "section", "body"]
    for name, recorded in RECORDED_SCHEMAS.items():
        ours = tools[name]
        assert ours["required"] == recorded["required"], name
        assert {key: ours["properties"][key] for key in recorded["properties"]} == recorded["properties"], name
    assert set(tools["mark_publish"]["properties"]) - set(RECORDED_SCHEMAS["mark_publish"]["properties"]) == {
        "on_conflict", "metadata"}
    assert tools["mark_publish"]["properties"]["on_conflict"]["enum"] == ["fail", "merge", "candidate"]


@pytest.mark.parametrize("transport", ["http", "quic"])
def test_the_recorded_session_reads_the_same(tmp_path, transport):
    if transport == "quic":
        pytest.importorskip("aioquic")
    with serve(tmp_path / "store", token=TOKEN, log=None, quic=transport == "quic") as running:
        host = running.mark_url if transport == "quic" else running.url
        results = calls(create_server(host, TOKEN, verify=False), *[(name, args) for name, args, _ in SESSION])
    for (name, args, recorded), result in zip(SESSION, results):
        assert not result.is_error, (name, args, text(result))
        assert unstamped(text(result)) == recorded, (name, args)
        fields = result.structured_content
        assert fields["status"] == recorded.split("\n")[0].split(": ")[1] and TOKEN not in json.dumps(fields)


def test_archive(server):
    results = calls(create_server(server.url, TOKEN),
                    ("mark_publish", {"url": DOC, "body": "x\n", "expected_version": 0}),
                    ("mark_archive", {"url": DOC}), ("mark_fetch", {"url": DOC}))
    assert [text(r) for r in results[1:]] == [
        "status: ok\nversion: 1\narchived: true\n", "status: archived\n\n\n# Archived\n\n/notes.md is archived\n"]


# ------------------------------------------------------------ on_conflict

BASE = "# Doc\n\n## A\n\na\n\n## B\n\nb\n"


def raced(server, mode, mine):
    """Publish BASE, then theirs over it, then `mine` (edited from version 1) in `mode`."""
    return calls(
        create_server(server.url, TOKEN),
        ("mark_publish", {"url": DOC, "body": BASE, "expected_version": 0}),
        ("mark_publish", {"url": DOC, "body": BASE.replace("b\n", "b, theirs\n"), "expected_version": 1}),
        ("mark_publish", {"url": DOC, "body": mine, "expected_version": 1, "on_conflict": mode}),
        ("mark_fetch", {"url": DOC}),
    )


def test_merge_publishes_a_clean_merge(server):
    *_, merged, latest = raced(server, "merge", BASE.replace("a\n", "a, mine\n"))
    both = "# Doc\n\n## A\n\na, mine\n\n## B\n\nb, theirs\n"
    assert text(merged) == f"status: ok\nversion: 3\nmerged: true\nbase-version: 1\ntheir-version: 2\n\n{both}"
    assert merged.structured_content == {"status": "ok", "version": 3, "merged": True, "base-version": 1,
                                         "their-version": 2, "body": both}
    assert latest.structured_content["body"] == both


def test_merge_returns_overlap_marked_and_publishes_nothing(server):
    *_, clash, latest = raced(server, "merge", BASE.replace("b\n", "b, mine\n"))
    assert text(clash) == ("status: conflict\nyour-version: 1\ncurrent-version: 2\nmergeable: false\n\n"
                           "# Doc\n\n## A\n\na\n\n## B\n\n<<<<<<< ours\nb, mine\n=======\nb, theirs\n>>>>>>> theirs\n")
    assert latest.structured_content["version"] == "2"


@pytest.mark.parametrize("mine,markers", [(BASE.replace("a\n", "a, mine\n"), False),
                                          (BASE.replace("b\n", "b, mine\n"), True)])
def test_candidate_merges_and_publishes_nothing(server, mine, markers):
    *_, candidate, latest = raced(server, "candidate", mine)
    fields = candidate.structured_content
    assert text(candidate).startswith(
        f"status: merge-candidate\nyour-version: 1\ncurrent-version: 2\npublish-at-version: 2\n"
        f"has-markers: {'true' if markers else 'false'}\n\n# Doc\n")
    assert (fields["has-markers"], "<<<<<<< ours" in fields["body"]) == (markers, markers)
    assert latest.structured_content["version"] == "2"  # nothing published
    published = calls(create_server(server.url, TOKEN), ("mark_publish", {
        "url": DOC, "body": fields["body"], "expected_version": fields["publish-at-version"]}))[0]
    assert text(published).startswith("status: created\nversion: 3\n")


def test_a_publish_that_needs_no_merge_answers_as_demarkus_mcp_in_every_mode(server):
    results = calls(create_server(server.url, TOKEN), *[
        ("mark_publish", {"url": f"/{mode}.md", "body": "x\n", "expected_version": 0, "on_conflict": mode})
        for mode in ("fail", "merge", "candidate")])
    assert [unstamped(text(r)) for r in results] == ["status: created\nversion: 1\nmodified: TIME\n"] * 3


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("tool,arguments,named", [
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": "one"}, "expected_version"),
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": 1.5}, "expected_version"),
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": -1}, "expected_version"),
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": True}, "expected_version"),
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": 0, "on_conflict": "maybe"}, "on_conflict"),
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": 0, "metadata": {"a b": "x"}}, "metadata"),
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": 0, "metadata": {"auth": "x"}}, "auth"),
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": 0, "metadata": {"expected-version": "9"}},
     "expected-version"),
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": 0, "metadata": {"n": 1}}, "metadata"),
    ("mark_publish", {"url": DOC, "body": "x", "expected_version": 0, "metadata": ["a"]}, "metadata"),
    ("mark_publish", {"url": DOC, "expected_version": 0}, "body"),
    ("mark_fetch", {}, "url"),
    ("mark_fetch", {"url": "ftp://example.com/a.md"}, "url"),
    ("mark_append", {"url": DOC, "body": ""}, "body"),
])
def test_a_bad_argument_is_a_tool_error_naming_it(server, tool, arguments, named):
    result, after = calls(create_server(server.url, TOKEN), (tool, arguments), ("mark_fetch", {"url": "/health"}))
    assert result.is_error and named in text(result)
    assert text(after).startswith("status: ok\n")  # the server answers on: a tool error, never a crash


def test_a_bare_path_needs_a_host(server):
    result = calls(create_server(None, TOKEN), ("mark_fetch", {"url": DOC}))[0]
    assert result.is_error and "--host" in text(result)
    result = calls(create_server(None, TOKEN), ("mark_fetch", {"url": server.url + "/health"}))[0]
    assert text(result).startswith("status: ok\n")  # a full URL needs none


def test_a_transport_failure_says_what_failed_and_never_the_token(server, caplog):
    url = server.url
    server.close()
    result = calls(create_server(url, TOKEN, timeout=2), ("mark_publish", {
        "url": DOC, "body": "x\n", "expected_version": 0}))[0]
    assert result.is_error and "transport" in text(result) and "PUBLISH" in text(result)
    assert TOKEN not in text(result) and TOKEN not in caplog.text


def test_the_token_goes_to_the_host_only(server, tmp_path):
    with serve(tmp_path / "other", token=TOKEN, log=None) as other:
        result = calls(create_server(server.url, TOKEN), ("mark_publish", {
            "url": other.url + DOC, "body": "x\n", "expected_version": 0}))[0]
    assert text(result).startswith("status: unauthorized\n")  # the other server never saw the token


# ------------------------------------------------------- stdio, and three agents

def test_mark_mcp_over_stdio(server):
    command = Path(sys.executable).with_name("mark-mcp")
    params = StdioServerParameters(command=str(command), args=["--host", server.url],
                                   env={"MARK_TOKEN": TOKEN, "PATH": str(command.parent)})

    async def run():
        async with Client(params) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            published = await client.call_tool("mark_publish", {"url": DOC, "body": "# Hi\n", "expected_version": 0})
            return names, published

    names, published = anyio.run(run)
    assert sorted(names) == sorted([*RECORDED_SCHEMAS, "mark_update_section"])
    assert unstamped(text(published)) == "status: created\nversion: 1\nmodified: TIME\n"


def test_mark_mcp_over_streamable_http(server):
    import socket
    import subprocess
    import time

    with socket.socket() as probe:  # a free port on loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = Path(sys.executable).with_name("mark-mcp")
    process = subprocess.Popen([str(command), "--host", server.url, "--transport", "streamable-http",
                                "--listen", f"127.0.0.1:{port}"],
                               env={"MARK_TOKEN": TOKEN, "PATH": str(command.parent)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(200):  # until it listens (bounded: 20 s)
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, process.stderr.read()
            time.sleep(0.1)

        async def run():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                published = await client.call_tool("mark_publish", {"url": DOC, "body": "# Hi\n", "expected_version": 0})
                return names, published

        names, published = anyio.run(run)
    finally:
        process.terminate()
        process.wait(10)
    assert sorted(names) == sorted([*RECORDED_SCHEMAS, "mark_update_section"])
    assert unstamped(text(published)) == "status: created\nversion: 1\nmodified: TIME\n"


@pytest.mark.parametrize("listen", ["8808", "127.0.0.1:http", "127.0.0.1:70000"])
def test_mark_mcp_refuses_a_bad_listen_address(listen, capsys):
    from mark_mcp import main

    with pytest.raises(SystemExit):
        main(["--transport", "streamable-http", "--listen", listen])
    assert "--listen must be HOST:PORT" in capsys.readouterr().err


def test_three_agents_at_once_lose_nothing(server):
    writers = ["Alice", "Bob", "Carol"]
    base = sectioned_document(writers)
    calls(create_server(server.url, TOKEN), ("mark_publish", {"url": DOC, "body": base, "expected_version": 0}))
    edits = {
        "Alice": replace_line(base, "Alice's intro.", "Alice's intro, sharpened."),
        "Bob": add_line(base, "Bob", "Bob adds a point."),
        "Carol": replace_line(base, "Alice's intro.", "Carol thinks Alice means X."),
    }
    results = {}

    async def agent(name):
        async with Client(create_server(server.url, TOKEN)) as client:
            results[name] = await client.call_tool("mark_publish", {
                "url": DOC, "body": edits[name], "expected_version": 1, "on_conflict": "merge"})

    async def run():
        async with anyio.create_task_group() as group:
            for name in writers:
                group.start_soon(agent, name)

    anyio.run(run)
    # "created": it needed no merge; "ok": it landed through one.
    landed = {name for name, result in results.items() if result.structured_content["status"] in ("created", "ok")}
    final = calls(create_server(server.url, TOKEN), ("mark_fetch", {"url": DOC}))[0].structured_content["body"]
    assert "Bob" in landed and "Bob adds a point.\n" in final  # disjoint: lands, no LLM
    # Alice and Carol rewrote one line: whoever came second gets it marked, and nothing of theirs lands.
    first, second = sorted(["Alice", "Carol"], key=lambda name: name not in landed)
    assert first in landed and results[second].structured_content["status"] == "conflict"
    assert results[second].structured_content["mergeable"] is False
    assert "<<<<<<< ours" in results[second].structured_content["body"]
    assert edits[first].split("\n")[4] in final and edits[second].split("\n")[4] not in final


def test_tool_description():
    schema = MARK_PUBLISH_TOOL["inputSchema"]
    assert MARK_PUBLISH_TOOL["name"] == "mark_publish"
    assert schema["properties"]["on_conflict"]["enum"] == ["fail", "merge", "candidate"]
    assert schema["required"] == ["url", "body", "expected_version"]  # demarkus-mcp's
    json.dumps(MARK_PUBLISH_TOOL)
