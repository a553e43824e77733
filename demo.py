"""See the merge publish loop work: `python demo.py [--sections] [--quic] [--mcp]`, nothing to configure.

It starts the reference server in-process on a free loopback port over a
temporary store, seeds a document with one section per writer, and lets
three writers publish concurrently with on_conflict="merge", all edited
from version 1.  Alice and Bob edit their own sections: disjoint, so both
land, the later one through a diff3 merge.  Carol rewrites the line Alice
rewrote: whichever of the two comes second gets a structured conflict with
markers, and nothing of theirs is published.  It prints each writer's
answer and the final document.

With --sections four writers each rewrite their own section of the
document at once with update_section, sending that section only: every
edit lands, none needs a merge, and no LLM is asked anything.

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
from typing import Callable, Optional

from mark_publish import MarkClient, mark_publish
from mark_sections import update_section
from mark_server import serve
from testkit import add_line, replace_line, section_of, sectioned_document, together


def run_demo(quic: bool = False, mcp: bool = False, sections: bool = False) -> int:
    token = secrets.token_hex(16)
    if sections:
        writers = ["Alice", "Bob", "Carol", "Dave"]
        base = sectioned_document(writers)
        edits = {name: section_of(add_line(replace_line(base, f"{name}'s intro.", f"{name}'s intro, rewritten."),
                                           name, f"{name} adds a point."), name) for name in writers}
    else:
        writers = ["Alice", "Bob", "Carol"]
        base = sectioned_document(writers)
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
            write = (_agent if mcp else _writer)(url, token, verify)
            answers = dict(zip(writers, together(*[
                lambda name=name: write(edits[name], f"## {name}" if sections else None) for name in writers])))
            for name in writers:
                print(f"=== {name} ===")
                print(answers[name])
            final = seed.fetch("/notes.md")
        print(f"=== /notes.md, version {final.metadata['version']} ===")
        print(final.body)
    return 0


def _writer(url: str, token: str, verify) -> Callable[[str, Optional[str]], str]:
    """A writer using the library: mark_publish(..., on_conflict="merge"), or update_section."""
    def write(body: str, section: Optional[str]) -> str:
        with MarkClient(url, token=token, verify=verify) as client:
            if section:
                return update_section(client, "/notes.md", section, body, expected_version=1).to_text()
            return mark_publish(client, "/notes.md", body, expected_version=1, on_conflict="merge").to_text()

    return write


def _agent(url: str, token: str, verify) -> Callable[[str, Optional[str]], str]:
    """A writer that is an agent: an MCP client calling the mark_publish tool, or mark_update_section."""
    import anyio
    from mcp import Client

    from mark_mcp import create_server

    def write(body: str, section: Optional[str]) -> str:
        async def call() -> str:
            async with Client(create_server(url, token, verify=verify)) as client:
                if section:
                    result = await client.call_tool("mark_update_section", {
                        "url": "/notes.md", "section": section, "body": body, "expected_version": 1})
                else:
                    result = await client.call_tool("mark_publish", {
                        "url": "/notes.md", "body": body, "expected_version": 1, "on_conflict": "merge"})
                return result.content[0].text

        return anyio.run(call)

    return write


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quic", action="store_true", help="speak Mark over QUIC (mark://)")
    parser.add_argument("--mcp", action="store_true", help="the writers are MCP clients of mark_mcp.py")
    parser.add_argument("--sections", action="store_true",
                        help="four writers rewrite four sections at once, each sending its section only")
    options = parser.parse_args()
    sys.exit(run_demo(options.quic, options.mcp, options.sections))
