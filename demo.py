"""See the merge publish loop work: `python demo.py [--quic]`, nothing to configure.

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
"""

import argparse
import os
import secrets
import sys
import tempfile
import threading
from typing import Dict

from mark_publish import MarkClient, PublishResult, mark_publish
from mark_server import serve
from testkit import add_line, replace_line, sectioned_document


def run_demo(quic: bool = False) -> int:
    token = secrets.token_hex(16)
    writers = ["Alice", "Bob", "Carol"]
    with tempfile.TemporaryDirectory() as store, serve(store, token=token, log=None, quic=quic) as server:
        url, verify = server.url, True
        if quic:
            url, verify = server.mark_url, os.path.join(store, ".ca.pem")
            with open(verify, "wb") as ca:
                ca.write(server.certificate_pem)
        print(f"server: {url}\n")
        seed = MarkClient(url, token=token, verify=verify)
        seed.publish("/notes.md", sectioned_document(writers), expected_version=0)
        edits = {
            "Alice": replace_line(sectioned_document(writers), "Alice's intro.", "Alice's intro, sharpened."),
            "Bob": add_line(sectioned_document(writers), "Bob", "Bob adds a point."),
            "Carol": replace_line(sectioned_document(writers), "Alice's intro.", "Carol thinks Alice means X."),
        }
        results: Dict[str, PublishResult] = {}
        start = threading.Barrier(len(edits))

        def write(name: str) -> None:
            with MarkClient(url, token=token, verify=verify) as client:
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
        seed.close()
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quic", action="store_true", help="speak Mark over QUIC (mark://)")
    sys.exit(run_demo(parser.parse_args().quic))
