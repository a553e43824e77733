"""The package against the real Demarkus server: ../shared/real-demarkus/bin/demarkus-server.

The real server listens on every interface, so it runs only inside the
loopback-only network namespace that ../shared/real-demarkus/loopback
makes, with the clients beside it.  Run from outside, this module runs
itself again in there (one test here, whose output is the inner run's).
Where ../shared is absent (a user's clone) it is skipped; in CI ($CI) that
is a failure, so the suite can never go green without the real server.
"""

import os
import subprocess
import sys

import pytest

from mark_publish import MarkClient, MarkError, PublishResult, mark_append, mark_publish
from mark_sections import fetch_section, update_section
from testkit import (REAL_DEMARKUS, add_line, inside_loopback, real_demarkus, replace_line, section_of,
                     section_publish, sectioned_document, together, write_rounds)

if not (REAL_DEMARKUS / "bin" / "demarkus-server").exists():
    if os.environ.get("CI"):
        pytest.fail(f"CI must test against the real server, and {REAL_DEMARKUS} is missing", pytrace=False)
    pytest.skip(f"{REAL_DEMARKUS} is not beside this clone: no real Demarkus server to test against",
                allow_module_level=True)

TOKEN = "real-demarkus-test-token"
PATH = "/shared.md"


if not inside_loopback():
    def test_against_the_real_server_in_its_loopback_namespace():
        run = subprocess.run([str(REAL_DEMARKUS / "loopback"), sys.executable, "-m", "pytest", "-q",
                              "-p", "no:cacheprovider", "-s", __file__],
                             capture_output=True, text=True, timeout=600)
        print(run.stdout[-3000:], run.stderr[-3000:])
        assert run.returncode == 0, run.stdout[-5000:] + run.stderr[-2000:]
        assert " passed" in run.stdout.splitlines()[-1] and "skipped" not in run.stdout.splitlines()[-1]
else:
    @pytest.fixture
    def real(tmp_path):
        with real_demarkus(tmp_path, TOKEN) as url:  # the default rate limit: 50 a second, bursts of 100
            yield url

    def client(url):
        return MarkClient(url, token=TOKEN, verify=False)

    def test_publish_conflict_merge_candidate_append(real):
        c = client(real)
        base = sectioned_document(["A", "B"])
        assert c.publish(PATH, base, expected_version=0).status == "created"
        theirs = add_line(base, "B", "B's line")
        assert mark_publish(c, PATH, theirs, 1).to_text() == "status: ok\nversion: 2\nmerged: false\n"
        ours = add_line(base, "A", "A's line")
        assert mark_publish(c, PATH, ours, 1).to_text() == "status: conflict\nyour-version: 1\ncurrent-version: 2\n"
        candidate = mark_publish(c, PATH, ours, 1, on_conflict="candidate")
        assert (candidate.status, candidate.publish_at_version, candidate.has_markers) == ("merge-candidate", 2, False)
        merged = mark_publish(c, PATH, ours, 1, on_conflict="merge")
        assert (merged.status, merged.version, merged.merged, merged.their_version) == ("ok", 3, True, 2)
        assert merged.body == candidate.body and c.fetch(PATH).body == merged.body
        assert "A's line" in merged.body and "B's line" in merged.body
        again = mark_publish(c, PATH, ours, 1, on_conflict="merge")  # the same edit once more: nothing twice
        assert again.status == "ok" and c.fetch(PATH).body.count("A's line") == 1
        overlap = mark_publish(c, PATH, add_line(base, "A", "A's other line"), 1, on_conflict="merge")
        assert overlap.status == "conflict" and overlap.mergeable is False and "<<<<<<< ours\n" in overlap.body
        appended = mark_append(c, PATH, "- appended\n")
        assert appended.status == "ok" and c.fetch(PATH).body.endswith("\n- appended\n")
        assert c.versions(PATH).metadata["chain-valid"] == "true"

    def test_three_concurrent_writers_lose_nothing(real):
        writers = ["A", "B", "C"]
        base = sectioned_document(writers)
        client(real).publish(PATH, base, expected_version=0)
        edits = {"A": add_line(base, "A", "A was here"), "B": add_line(base, "B", "B was here"),
                 "C": replace_line(base, "A's intro.", "C rewrote A's intro.")}
        results = together(*[lambda w=w: mark_publish(client(real), PATH, edits[w], 1, on_conflict="merge")
                             for w in writers])
        final = client(real).fetch(PATH).body
        for writer, result in zip(writers, results):
            line = {"A": "A was here", "B": "B was here", "C": "C rewrote A's intro."}[writer]
            if result.status == "ok":
                assert f"\n{line}\n" in final
            else:
                assert result.mergeable is False and f"\n{line}\n" not in final
                assert result.reason == "contention" or "<<<<<<< ours\n" in result.body

    @pytest.mark.parametrize("rate_limit", [None, 0], ids=["rate-limited", "unlimited"])
    @pytest.mark.parametrize("run", [1, 2, 3])
    def test_eight_writers_ten_merged_edits_each(tmp_path, rate_limit, run):
        writers = [f"W{n}" for n in range(8)]
        with real_demarkus(tmp_path, TOKEN, rate_limit) as url:
            client(url).publish(PATH, sectioned_document(writers), expected_version=0)

            def merge(*args):
                try:
                    return mark_publish(*args, on_conflict="merge")
                except MarkError as error:  # loud: the version it names could not be put back exactly
                    assert error.status == "overwritten", error
                    return PublishResult("raised", reason=error.metadata["lost-version"])

            def work(writer):
                with client(url) as c:
                    return write_rounds(c, PATH, writer, 10, merge)

            outcomes = [outcome for rounds in together(*[lambda w=w: work(w) for w in writers])
                        for outcome in rounds]
            final = client(url).fetch(PATH).body
            named = [client(url).fetch(PATH, version=int(result.reason)).body
                     for _, result, _ in outcomes if result.status == "raised"]
        landed = [line for line, result, _ in outcomes if result.status == "ok"]
        reported = [line for line, result, _ in outcomes if result.status == "conflict"]
        repaired = sum(result.repaired is not None for _, result, _ in outcomes)
        print(f"\nreal server, rate limit {rate_limit}, run {run}: {len(landed)} landed, "
              f"{len(reported)} reported back, {repaired} repaired, {len(named)} raised 'overwritten'")
        assert len(outcomes) == 80
        # Nothing is lost silently: a landed line missing from the document is in a version that
        # a call raised about (the real server's stale write, where putting it back would be a guess).
        assert [line for line in landed if f"\n{line}\n" not in final
                and not any(f"\n{line}\n" in body for body in named)] == []
        assert [line for line in reported if f"\n{line}\n" in final] == []

    def test_eight_section_writers_ten_edits_each_lose_nothing(real):
        writers = [f"W{n}" for n in range(8)]
        client(real).publish(PATH, sectioned_document(writers), expected_version=0)

        def work(writer):
            with client(real) as c:
                return write_rounds(c, PATH, writer, 10, section_publish(writer))

        outcomes = [outcome for rounds in together(*[lambda w=w: work(w) for w in writers]) for outcome in rounds]
        final = client(real).fetch(PATH).body
        landed = [line for line, result, _ in outcomes if result.status == "ok"]
        print(f"\nreal server, section writes: {len(landed)} of {len(outcomes)} landed")
        assert [line for line in landed if f"\n{line}\n" not in final] == []
        assert [line for line, result, _ in outcomes if result.status != "ok" and f"\n{line}\n" in final] == []
        # Each writer's own section only: nothing to merge, but a version the server overwrote.
        assert all(result.merged is False or result.repaired is not None
                   for _, result, _ in outcomes if result.status == "ok")

    def test_a_section_reads_and_writes_on_the_real_server(real):
        c = client(real)
        base = sectioned_document(["A", "B"])
        c.publish(PATH, base, expected_version=0)
        res = update_section(c, PATH, "#b", section_of(add_line(base, "B", "B's line"), "B"), expected_version=1)
        assert res.to_text() == "status: ok\nversion: 2\nsection: #b\nmerged: false\n"
        assert fetch_section(c, PATH, "#b").body == section_of(add_line(base, "B", "B's line"), "B")
        assert c.fetch(PATH).body == add_line(base, "B", "B's line")
