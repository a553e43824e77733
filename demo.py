"""See the merge publish loop work: `python demo.py [--quic] [--mcp]`, nothing to configure.

It starts the reference server in-process on a free loopback port over a
temporary store, seeds a document with one section per writer, and lets
three writers publish concurrently with on_conflict="merge", all edited
from version 1.  Alice and Bob edit their own sections: disjoint, so both
land, the later one through a diff3 merge.  Carol rewrites the line Alice
rewrote: whichever of the two comes second gets a structured conflict with
markers, and nothing of theirs is published.  It prints each writer's
answer and the final document.

With --quic the writers speak Mark over QUIC (mark://, as the real Demarkus
servers do; needs aioquic), trusting the server's development certificate.
With --mcp each writer is an agent: an MCP client calling mark_mcp.py's
mark_publish tool (needs mcp), and what it prints is the tool's answer.
"""

import argparse
import os
import secrets
import sys
import tempfile
from typing import Callable

from mark_publish import MarkClient, mark_publish
from mark_server import serve
from testkit import add_line, replace_line, sectioned_document, together

WRITERS = ["Alice", "Bob", "Carol"]


def run_demo(quic: bool = False, mcp: bool = False) -> int:
    token = secrets.token_hex(16)
    base = sectioned_document(WRITERS)
    edits = {
        "Alice": replace_line(base, "Alice's intro.", "Alice's intro, sharpened."),
        "Bob": add_line(base, "Bob", "Bob adds a point."),
        "Carol": replace_line(base, "Alice's intro.", "Carol thinks Alice means X."),
    }
    with tempfile.TemporaryDirectory() as store, serve(store, token=token, log=None, quic=quic) as server:
        url, verify = server.url, True
        if quic:
            url, verify = server.mark_url, os.path.join(store, ".ca.pem")
            with open(verify, "wb") as ca:
                ca.write(server.certificate_pem)
        print(f"server: {url}{', writers speak MCP' if mcp else ''}\n")
        with MarkClient(url, token=token, verify=verify) as seed:
            seed.publish("/notes.md", base, expected_version=0)
            write = _agent(url, token, verify) if mcp else _writer(url, token, verify)
            answers = dict(zip(WRITERS, together(*[lambda name=name: write(edits[name]) for name in WRITERS])))
            for name in WRITERS:
                print(f"=== {name} ===")
                print(answers[name])
            final = seed.fetch("/notes.md")
        print(f"=== /notes.md, version {final.metadata['version']} ===")
        print(final.body)
    return 0


def _writer(url: str, token: str, verify) -> Callable[[str], str]:
    """A writer using the library: mark_publish(..., on_conflict="merge")."""
    def write(body: str) -> str:
        with MarkClient(url, token=token, verify=verify) as client:
            return mark_publish(client, "/notes.md", body, expected_version=1, on_conflict="merge").to_text()

    return write


def _agent(url: str, token: str, verify) -> Callable[[str], str]:
    """A writer that is an agent: an MCP client calling the mark_publish tool."""
    import anyio
    from mcp import Client

    from mark_mcp import create_server

    def write(body: str) -> str:
        async def call() -> str:
            async with Client(create_server(url, token, verify=verify)) as client:
                result = await client.call_tool("mark_publish", {
                    "url": "/notes.md", "body": body, "expected_version": 1, "on_conflict": "merge"})
                return result.content[0].text

        return anyio.run(call)

    return write


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quic", action="store_true", help="speak Mark over QUIC (mark://)")
    parser.add_argument("--mcp", action="store_true", help="the writers are MCP clients of mark_mcp.py")
    options = parser.parse_args()
    sys.exit(run_demo(options.quic, options.mcp))
