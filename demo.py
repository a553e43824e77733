"""See the merge publish loop work: `python demo.py`, nothing to configure.

It starts the reference server in-process on a free loopback port over a
temporary store, seeds a document with one section per writer, and lets
three writers publish concurrently with on_conflict="merge", all edited
from version 1.  Alice and Bob edit their own sections: disjoint, so both
land, the later one through a diff3 merge.  Carol rewrites the line Alice
rewrote: whichever of the two comes second gets a structured conflict with
markers, and nothing of theirs is published.  It prints each writer's answer and the final
document.

The helpers below build the sectioned documents that the end-to-end tests
and `python bench.py publish` use too.
"""

import secrets
import sys
import tempfile
import threading
from typing import Dict, List

from mark_publish import MarkClient, PublishResult, mark_publish
from mark_server import serve


def sectioned_document(writers: List[str]) -> str:
    """A document with a heading and one intro line per writer's section."""
    return "# Shared notes\n\n" + "".join(f"## {w}\n\n{w}'s intro.\n\n" for w in writers)


def add_line(text: str, writer: str, line: str) -> str:
    """`text` with `line` appended at the end of `writer`'s section."""
    lines = text.split("\n")
    start = lines.index(f"## {writer}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    while lines[end - 1] == "":  # insert before the blank lines that close the section
        end -= 1
    return "\n".join(lines[:end] + [line] + lines[end:])


def replace_line(text: str, old: str, new: str) -> str:
    return text.replace(f"\n{old}\n", f"\n{new}\n", 1)


def run_demo() -> int:
    token = secrets.token_hex(16)
    writers = ["Alice", "Bob", "Carol"]
    with tempfile.TemporaryDirectory() as store, serve(store, token=token, log=None) as server:
        seed = MarkClient(server.url, token=token)
        seed.publish("/notes.md", sectioned_document(writers), expected_version=0)
        edits = {
            "Alice": replace_line(sectioned_document(writers), "Alice's intro.", "Alice's intro, sharpened."),
            "Bob": add_line(sectioned_document(writers), "Bob", "Bob adds a point."),
            "Carol": replace_line(sectioned_document(writers), "Alice's intro.", "Carol thinks Alice means X."),
        }
        results: Dict[str, PublishResult] = {}
        start = threading.Barrier(len(edits))

        def write(name: str) -> None:
            with MarkClient(server.url, token=token) as client:
                start.wait()
                results[name] = mark_publish(client, "/notes.md", edits[name], expected_version=1,
                                             on_conflict="merge")

        threads = [threading.Thread(target=write, args=(name,)) for name in writers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for name in writers:
            print(f"=== {name} ===")
            print(results[name].to_text())
        final = seed.fetch("/notes.md")
        print(f"=== /notes.md, version {final.metadata['version']} ===")
        print(final.body)
    return 0


if __name__ == "__main__":
    sys.exit(run_demo())
