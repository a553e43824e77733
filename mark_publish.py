"""Publish to a Mark Protocol server without losing concurrent edits.

    >>> import tempfile
    >>> from mark_server import serve                     # a reference server to try it on
    >>> server = serve(tempfile.mkdtemp(), token="dev-secret", log=None)
    >>> from mark_publish import MarkClient, mark_publish
    >>> client = MarkClient(server.url, token="dev-secret")   # or "mark://host"; os.environ["MARK_TOKEN"]
    >>> client.publish("/notes.md", "# Notes\\n\\nA.\\n\\nB.\\n", expected_version=0).status
    'created'
    >>> page = client.fetch("/notes.md")                  # MarkResponse(status, metadata, body)
    >>> version = int(page.metadata["version"])
    >>> client.publish("/notes.md", "# Notes\\n\\nA.\\n\\nB, theirs.\\n", version).status  # someone else
    'created'
    >>> res = mark_publish(client, "/notes.md", page.body.replace("A.", "A, ours."),
    ...                    expected_version=version, on_conflict="merge")
    >>> print(res.to_text(), end="")
    status: ok
    version: 3
    merged: true
    base-version: 1
    their-version: 2
    <BLANKLINE>
    # Notes
    <BLANKLINE>
    A, ours.
    <BLANKLINE>
    B, theirs.
    >>> client.close(); server.close()

    $ MARK_TOKEN=... python -m mark_publish --server URL /notes.md --expected-version 6 \\
          --on-conflict merge --file notes.md      # exit 0 ok, 1 conflict, 2 error

Mark documents are versioned and immutable; a PUBLISH carries the version
the caller edited (`expected-version`) and loses to any writer that came in
between with status `conflict`.  With the default `on_conflict="fail"` that
conflict is returned as it is.  With `on_conflict="merge"` the loop in
`merge_and_publish` takes over:

1. FETCH the version the caller edited (the base; "" for version 0).
   Versions are immutable, so the client caches them.
2. FETCH the version the conflict names (theirs), by number.
3. `diff3(base, ours, theirs)`.  Clean: PUBLISH the merge against that
   version.  Overlapping edits: publish nothing and return `status:
   conflict, mergeable: false` with the marked body for a person or an LLM.
4. If that PUBLISH conflicts too (yet another writer), wait a random,
   growing while (RETRY_PAUSE) and go back to 2 with the newest version:
   at most `max_retries` attempts in all, then return `reason: contention`.

Whenever theirs turns out to be what this call published last, the
server stored it after all: as one past the version it was sent against,
it landed; later, it went over another writer's version, which the
call restores before it returns (`_repair`; the answer says `repaired`).

With `on_conflict="candidate"` (`merge_candidate`) steps 1 to 3 run, and
the merge comes back unpublished as `status: merge-candidate`, with the
version to publish it at: for an agent that reads a merge before it lands.

A writer that owns one section sends only that: `update_section` puts it
into whatever version is latest, through the same loop (its diff3 is of
that section alone), so writers of other sections never conflict with it;
`client.fetch("/doc.md#anchor")` reads one section.

Every path either publishes a body holding the caller's edits or publishes
nothing of them and says so: a body is never silently dropped.  A request
the server refuses unhandled (its rate limit) is sent again, by the deadline.

Two wires carry the same Mark messages.  `mark://host[:port]` is Mark over
QUIC, as the real Demarkus servers speak it: one QUIC connection (ALPN
"mark"), a stream per request carrying "VERB /path\n", the metadata block
and the body; it needs aioquic (`pip install 'mark-publish[quic]'`),
imported only then.  `http(s)://` is Mark over HTTP (binding v1): the Mark
verb is the HTTP method, the Mark request is the HTTP body, and the Mark
response comes back the same way with HTTP 200.  This file needs
`requests` and `diff3.py` beside it; vendor the two together.
"""

from __future__ import annotations

import argparse
import hashlib
import ipaddress
import os
import random
import re
import sys
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, fields
from http.client import RemoteDisconnected
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union
from urllib.parse import quote, urlsplit

import requests
from urllib3 import exceptions as urllib3_exceptions

from diff3 import diff3, split_lines

__version__ = "0.2.0"  # the release this file is from; vendored copies keep saying it
__all__ = [
    "MarkClient", "MarkResponse", "MarkError", "PublishResult",
    "mark_publish", "after_conflict", "merge_and_publish", "merge_candidate", "mark_append", "update_section",
    "main",
]

DEFAULT_TIMEOUT = 10.0
MARK_PORT = 6309  # mark:// without a port
_READS = ("FETCH", "LIST", "VERSIONS")  # verbs safe to send again
# The most a server may send back: twice the largest document a Mark server
# accepts (10 MiB), with room for metadata.  Anything larger is refused
# while it arrives, never held whole.
MAX_RESPONSE_BYTES = 24 * 1024 * 1024
_CACHED_VERSIONS = 64  # immutable versions kept per client
REFUSED_TRIES = 8  # sends of a request the server keeps refusing unhandled, within the deadline
_LOOK_AHEAD = 16  # versions after expected-version searched for a write whose answer was lost
_REPAIR_TRIES = 10  # PUBLISHes a repair may take, at the least, while others keep publishing
# After a lost race, a merge waits up to this long, then twice as long, and so on (at random:
# writers that lost together do not come back together), within the client's timeout.
# `python bench.py publish` at 8 writers: 0.02 s escalates ~35% of edits, 0.3 s ~1%.
RETRY_PAUSE = 0.3


class MarkResponse(NamedTuple):
    status: str
    metadata: Dict[str, str]
    body: str


class MarkError(Exception):
    """What went wrong, as a script branches on it.

    `status` is a Mark error status the server answered ("not-found",
    "not-permitted", ...), or: "transport" (no usable answer came back),
    "refused" (the server kept refusing the request unhandled: try again
    later), "overwritten" (a version the server overwrote could not be
    restored; `metadata["lost-version"]` names it).  `may_have_landed`:
    a write went out and whether it was stored is unknown (or it was
    stored, for "overwritten"): fetch before retrying.
    """

    def __init__(self, status: str, message: str, metadata: Optional[Dict[str, str]] = None,
                 may_have_landed: bool = False):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.metadata = dict(metadata or {})
        self.may_have_landed = may_have_landed

    @classmethod
    def from_response(cls, response: MarkResponse, doing: str) -> "MarkError":
        message = " ".join(line.lstrip("# ") for line in response.body.split("\n") if line.strip())
        return cls(response.status, f"{doing}: {message or response.status}", response.metadata)


@dataclass
class PublishResult:
    """What a publish came to; `to_text()` is the agent-facing answer."""

    status: str
    version: Optional[int] = None
    section: Optional[str] = None  # update_section's: the section's anchor
    merged: Optional[bool] = None
    base_version: Optional[int] = None
    their_version: Optional[int] = None
    your_version: Optional[int] = None
    current_version: Optional[int] = None
    publish_at_version: Optional[int] = None
    has_markers: Optional[bool] = None
    mergeable: Optional[bool] = None
    reason: Optional[str] = None
    retries: Optional[int] = None
    repaired: Optional[int] = None
    body: Optional[str] = None

    def to_text(self) -> str:
        lines = []
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name == "body" or value is None:
                continue
            if isinstance(value, bool):
                value = "true" if value else "false"
            lines.append(f"{field.name.replace('_', '-')}: {value}\n")
        if self.body is not None:
            lines.append("\n" + self.body)
        return "".join(lines)


# --------------------------------------------------------------- publishing

def mark_publish(
    client: MarkClient,
    path: str,
    body: str,
    expected_version: int,
    on_conflict: str = "fail",
    max_retries: int = 3,
    metadata: Optional[Dict[str, str]] = None,
) -> PublishResult:
    """PUBLISH `body`, edited from `expected_version`; on a lost race, as `on_conflict` says.

    "fail" returns the conflict; "merge" merges and publishes the merge;
    "candidate" merges and publishes nothing, for the caller to read the
    merge first (see `after_conflict`).  Raises `MarkError` for any Mark
    error status and for transport failures.
    """
    _check_publish(path, body, expected_version, max_retries, on_conflict)
    response = client.publish(path, body, expected_version, metadata)
    if response.status in ("ok", "created"):
        return PublishResult("ok", version=_int_field(response, "version"), merged=False)
    if response.status != "conflict":
        raise MarkError.from_response(response, f"PUBLISH {path}")
    return after_conflict(client, path, body, expected_version, response, on_conflict, max_retries, metadata)


def after_conflict(
    client: MarkClient,
    path: str,
    body: str,
    expected_version: int,
    conflict: MarkResponse,
    on_conflict: str = "fail",
    max_retries: int = 3,
    metadata: Optional[Dict[str, str]] = None,
) -> PublishResult:
    """What `mark_publish` does once the PUBLISH of `body` at `expected_version` answered `conflict`.

    The version the conflict names is read by number.  When it holds this
    very body, the server stored the write after all: as expected + 1 it
    is a retry of a publish that landed (`status: ok`); later, it was
    stored over the versions in between (the real server's stale write),
    and the version just before it is restored before anything else (see
    `_repair`); if the document then still carries the edit (writers who
    built on the stale write kept it), the answer is `ok`.  Then "merge"
    runs the merge loop, "candidate" merges once and publishes nothing,
    "fail" answers the conflict.
    """
    _check_publish(path, body, expected_version, max_retries, on_conflict)
    current = _int_field(conflict, "server-version")
    mine = _Sent(body, expected_version)
    if on_conflict == "merge":
        return _merge(client, path, body, expected_version, current, mine, max_retries, metadata)
    repairs: List[int] = []
    if _holds(client, path, current, body):
        if current == expected_version + 1:
            return PublishResult("ok", version=current, merged=False)
        repair = _repair(client, path, mine, current, max_retries, metadata, repairs, keep=False)
        # It could not be undone, only merged with; or writers who built on it kept it: the edit is in.
        if repair.kind == "ok" or (edited := _base(client, path, expected_version)) is not None \
                and _carries(repair.text, edited, body):
            return PublishResult("ok", version=repair.version, merged=True, base_version=expected_version,
                                 their_version=repair.their_version, repaired=repairs[0], body=repair.text)
        current = repair.version
    if on_conflict == "fail":
        return PublishResult("conflict", your_version=expected_version, current_version=current,
                             repaired=_first(repairs))
    return _candidate(client, path, body, expected_version, current, repairs)


def merge_and_publish(
    client: MarkClient,
    path: str,
    body: str,
    expected_version: int,
    max_retries: int = 3,
    metadata: Optional[Dict[str, str]] = None,
) -> PublishResult:
    """Merge `body` (edited from `expected_version`) onto the latest version and publish it.

    When that version is gone (never was, or dropped by the server's
    retention), returns `status: conflict, reason: base-unavailable`: fetch
    the document and redo the edit.
    """
    _check_publish(path, body, expected_version, max_retries)
    current = _current_version(client, path)
    return _merge(client, path, body, expected_version, current, _Sent(body, expected_version),
                  max_retries, metadata)


def merge_candidate(client: MarkClient, path: str, body: str, expected_version: int) -> PublishResult:
    """The merge `merge_and_publish` would publish, with nothing published: for an agent to read first.

    Returns `status: merge-candidate` with `publish_at_version` (the
    version to publish it against) and `has_markers` (whether the body
    holds conflict markers to resolve first), or the answers
    `merge_and_publish` gives when there is nothing to merge.
    """
    _check_publish(path, body, expected_version, 1)
    current = _current_version(client, path)
    if current == expected_version + 1 and _holds(client, path, current, body):
        return PublishResult("ok", version=current, merged=False)
    return _candidate(client, path, body, expected_version, current, [])


def mark_append(client: MarkClient, path: str, body: str,
                expected_version: Optional[int] = None) -> PublishResult:
    """APPEND `body` to the end of the document; never merges.

    With no `expected_version` (or 0), the current version is read first.
    """
    _check_path(path)
    _check_body(body)
    if not body:
        raise ValueError("body must not be empty for an APPEND")
    if expected_version is not None:
        _check_int("expected_version", expected_version, minimum=0)
    if not expected_version:
        response = client.versions(path)
        if response.status != "ok":
            raise MarkError.from_response(response, f"VERSIONS {path}")
        expected_version = _int_field(response, "current")
    response = client.append(path, body, expected_version)
    if response.status in ("ok", "created"):
        return PublishResult("ok", version=_int_field(response, "version"), merged=False)
    if response.status == "conflict":
        return PublishResult("conflict", your_version=expected_version,
                             current_version=_int_field(response, "server-version"))
    raise MarkError.from_response(response, f"APPEND {path}")


def update_section(
    client: MarkClient,
    path: str,
    section: str,
    body: str,
    expected_version: Optional[int] = None,
    max_retries: int = 3,
    metadata: Optional[Dict[str, str]] = None,
) -> PublishResult:
    """Replace one section of the document with `body`, on whatever version is latest.

    `section` names a heading by its text ("## Results" or "Results") or by
    its anchor as demarkus renders it ("#results"; "#results-1" is the
    second "Results").  A section runs from its heading line to the next
    heading of its level or higher; headings in code and comments do not count.
    `body` is the new section, its heading line included.  Every attempt
    puts it into the latest version, so edits to other sections never
    conflict.  With `expected_version` (the version `body` was edited
    from), a section changed since then is merged three-way on its own:
    clean publishes (`merged: true`, `body`: the document published);
    overlap publishes nothing and returns `status: conflict` with the
    document, markers in that section only.  Without it the section
    becomes `body` whatever it holds when the call starts (a writer who
    changes it during the call is merged with): pass the version you
    read, so that an edit made since is merged too, not replaced.
    Answers as `mark_publish`'s, with `section` (the anchor).  Raises
    ValueError for a section that is missing or named twice, MarkError
    as `mark_publish` does.
    """
    _check_path(path)
    _check_body(body)
    if not isinstance(section, str):
        raise TypeError(f"section must be str, not {type(section).__name__}")
    if not section.strip():
        raise ValueError("section must be a heading's text or anchor, such as '## Results' or '#results'")
    if expected_version is not None:
        _check_int("expected_version", expected_version, minimum=1)
    _check_int("max_retries", max_retries, minimum=1)
    if [h.start for h in _headings(body)[:1]] != [0]:
        raise ValueError(f"body must start with the section's heading line, such as '## Results', not {body[:40]!r}")
    # The section is replaced as it was in the version the caller edited, else in the newest one
    # now; the first attempt goes out against that version, as mark_publish's does.  Whoever
    # changes the section after it is merged with, never overwritten.
    since = _current_version(client, path) if expected_version is None else expected_version
    edited = _base(client, path, since)
    if edited is None:
        return _base_unavailable(client, path, since)
    found = _find_section(edited, section, path if expected_version is None else f"{path}/v{since}")
    then = edited[found.start:found.end]
    last: Dict[str, object] = {}  # what the latest attempt did: the section's anchor, and whether it merged

    def put(base: str, ours: str, latest: str) -> Tuple[str, bool]:
        """The merge loop's merge: `latest` with `body` as the section, merged with the
        section there where it changed since `then` (the loop's base and ours go unused)."""
        found = _find_section(latest, section, path)
        now = latest[found.start:found.end]
        merging = now != then
        new, overlap = diff3(then, body, now) if merging else (body, False)
        if found.end < len(latest) and not new.endswith("\n"):  # end it as the document's lines end
            new += "\r\n" if latest.partition("\n")[0].endswith("\r") else "\n"
        text = latest[:found.start] + new + latest[found.end:]
        written = found if overlap else next((h for h in _headings(text) if h.start == found.start), found)
        last.update(anchor="#" + written.anchor, merged=merging)
        return text, overlap

    repairs: List[int] = []
    # The first attempt is the write; max_retries more may follow, as in mark_publish.
    outcome = _publish_change(client, path, "", body, since, None, max_retries + 1, metadata, repairs, put)
    return _answer(outcome, not last["merged"], since, expected_version, repairs, max_retries, last["anchor"])


# ----------------------------------------------------------- the merge loop

class _Sent(NamedTuple):
    """A body this call published, and the version it published it against."""
    text: str
    against: int


class _Outcome(NamedTuple):
    """How `_publish_change` ended: "ok" (`text` is version `version`, merged onto
    `their_version`), "overlap" (`text` has markers; `version` is the latest seen)
    or "contention" (`version` is the latest seen)."""
    kind: str
    version: int
    text: str = ""
    their_version: int = 0


def _merge(client: MarkClient, path: str, body: str, expected_version: int, current: int, mine: _Sent,
           max_retries: int, metadata: Optional[Dict[str, str]]) -> PublishResult:
    """The merge loop, for `mark_publish(..., on_conflict="merge")` and `merge_and_publish`."""
    base = _base(client, path, expected_version)
    if base is None:
        return _base_unavailable(client, path, expected_version)
    repairs: List[int] = []
    outcome = _publish_change(client, path, base, body, current, mine, max_retries, metadata, repairs)
    return _answer(outcome, outcome.text == body, expected_version, expected_version, repairs, max_retries)


def _answer(outcome: _Outcome, plain: bool, base_version: int, your_version: Optional[int], repairs: List[int],
            max_retries: int, section: Optional[str] = None) -> PublishResult:
    """The caller's answer once the merge loop ended in `outcome`; `plain`: what it
    published is what the caller sent, merged with nothing."""
    shared = dict(section=section, repaired=_first(repairs))
    if outcome.kind == "ok" and plain and not repairs:
        return PublishResult("ok", version=outcome.version, section=section, merged=False)
    if outcome.kind == "ok":
        return PublishResult("ok", version=outcome.version, merged=True, base_version=base_version,
                             their_version=outcome.their_version, body=outcome.text, **shared)
    if outcome.kind == "overlap":
        return PublishResult("conflict", your_version=your_version, current_version=outcome.version,
                             mergeable=False, body=outcome.text, **shared)
    return PublishResult("conflict", your_version=your_version, current_version=outcome.version,
                         mergeable=False, reason="contention", retries=max_retries, **shared)


def _publish_change(client: MarkClient, path: str, base: str, ours: str, current: int, sent: Optional[_Sent],
                    tries: int, metadata: Optional[Dict[str, str]], repairs: List[int],
                    merge: Callable[[str, str, str], Tuple[str, bool]] = diff3) -> _Outcome:
    """Publish the change from `base` to `ours` onto the latest version: at most `tries` PUBLISHes.

    Each round reads the latest version by number (`current`, then the one
    each conflict names, or the newest after a pause), merges
    `diff3(base, ours, theirs)` and publishes a clean merge against it.
    Between rounds it waits a random, growing while (RETRY_PAUSE) within
    the client's timeout, so that writers who lost a race together do
    not race again together.  When the latest version is `sent`, what
    this call published last, the server stored it after answering
    conflict or losing the answer: as `sent.against + 1` it landed; later,
    it went over versions in between, which `_repair` restores first.
    """
    published, deadline = 0, time.monotonic() + client.timeout
    while True:
        theirs = _body(client, path, current)
        if sent is not None and theirs == sent.text:
            if current == sent.against + 1:
                return _Outcome("ok", current, theirs, sent.against)
            repair = _repair(client, path, sent, current, tries, metadata, repairs, keep=True)
            if repair.kind == "ok":  # the overwritten version merged back in, ours kept
                return repair
            current, theirs, sent = repair.version, _body(client, path, repair.version), None
        if published == tries:
            return _Outcome("contention", current)
        merged, overlap = merge(base, ours, theirs)
        if overlap:
            return _Outcome("overlap", current, merged)
        response = client.publish(path, merged, current, metadata)
        published += 1
        if response.status in ("ok", "created"):
            return _Outcome("ok", _int_field(response, "version"), merged, current)
        if response.status != "conflict":
            raise MarkError.from_response(response, f"PUBLISH {path}")
        sent, current = _Sent(merged, current), _int_field(response, "server-version")
        if published < tries and _body(client, path, current) != sent.text:
            # Others keep publishing: step aside for a random, growing while, then merge onto the newest.
            pause = random.uniform(0, RETRY_PAUSE * 2 ** (published - 1))
            if time.monotonic() + pause < deadline:
                time.sleep(pause)
                current = _current_version(client, path)


def _repair(client: MarkClient, path: str, sent: _Sent, stored: int, tries: int,
            metadata: Optional[Dict[str, str]], repairs: List[int], keep: bool) -> _Outcome:
    """Restore version `stored - 1`, which the server overwrote with `sent` (stored as `stored`).

    The real server can store a write made against version N as N+2 or
    later, over another writer's N+1, and answer it `conflict`: N+1's
    edits are then gone from the current document, though its writer was
    told they landed.  Two ways to bring them back, `keep` says which first:
    keeping ours, publish the change from version `sent.against` to N+1
    onto the latest version ("ok"); undoing ours, publish the change from
    `sent` back to N+1 ("undone"; while the latest is still `stored`, that
    is N+1's body again).  Where both overlap (a writer built on the stale
    version next to what it dropped), N+1 is merged back in keeping both
    sides of each overlap, N+1's lines first (`_union`): its edits are owed
    to a writer already told they landed.  MarkError when none lands: a
    person must restore N+1.
    """
    lost = stored - 1
    repairs.append(lost)
    restored = _body(client, path, lost)
    against = _body(client, path, sent.against)
    tries = max(tries, _REPAIR_TRIES)  # owed to another writer: more rounds than an edit gets
    ways = [("ok", against, diff3), ("undone", sent.text, diff3)]
    for kind, base, merge in (ways if keep else ways[::-1]) + [("ok", against, _union)]:
        outcome = _publish_change(client, path, base, restored, stored, None, tries, metadata, repairs, merge)
        if outcome.kind == "ok":
            return outcome._replace(kind=kind, their_version=lost)
        stored = outcome.version  # the latest seen: the next way starts there
    raise MarkError("overwritten", f"{path}: the server stored a write of ours over version {lost} "
                                   f"and restoring it failed ({outcome.kind}); publish {path}/v{lost} "
                                   "again by hand", {"lost-version": str(lost)}, may_have_landed=True)


def _union(base: str, restored: str, latest: str) -> Tuple[str, bool]:
    """diff3, with each overlap resolved as both sides, `restored`'s lines first; overlapping
    (True) where that cannot be read back safely (a marker line among the texts' own lines)."""
    token = hashlib.sha256((base + restored + latest).encode("utf-8")).hexdigest()[:16]
    start, end = f"<<<<<<< restored-{token}\n", f">>>>>>> latest-{token}\n"
    merged, overlap = diff3(base, restored, latest, labels=(f"restored-{token}", "base", f"latest-{token}"))
    if not overlap:
        return merged, False
    out: List[str] = []
    block: Optional[List[str]] = None
    for line in merged.splitlines(keepends=True):
        if line == start:
            block = []
        elif line == end and block is not None:
            if block.count("=======\n") != 1:
                return merged, True  # a line of the texts reads as the separator: no safe reading
            out += [kept for kept in block if kept != "=======\n"]
            block = None
        else:
            (out if block is None else block).append(line)
    return "".join(out), False


def _candidate(client: MarkClient, path: str, body: str, expected_version: int, current: int,
               repairs: List[int]) -> PublishResult:
    base = _base(client, path, expected_version)
    if base is None:
        return _base_unavailable(client, path, expected_version)
    merged, had_conflict = diff3(base, body, _body(client, path, current))
    return PublishResult("merge-candidate", your_version=expected_version, current_version=current,
                         publish_at_version=current, has_markers=had_conflict, repaired=_first(repairs),
                         body=merged)


def _base(client: MarkClient, path: str, expected_version: int) -> Optional[str]:
    """The body of the version the caller edited ("" for version 0); None when it is gone."""
    if not expected_version:
        return ""
    response = client.fetch(path, version=expected_version)
    if response.status == "not-found":  # never was, or the server let it go
        return None
    if response.status != "ok":
        raise MarkError.from_response(response, f"FETCH {path}/v{expected_version}")
    return response.body


def _base_unavailable(client: MarkClient, path: str, expected_version: int) -> PublishResult:
    return PublishResult("conflict", your_version=expected_version, current_version=_current_version(client, path),
                         mergeable=False, reason="base-unavailable")


def _body(client: MarkClient, path: str, version: int) -> str:
    """The body of `version` ("" for version 0), read by number: always that version's own body."""
    if not version:
        return ""
    response = client.fetch(path, version=version)
    if response.status != "ok":
        raise MarkError.from_response(response, f"FETCH {path}/v{version}")
    return response.body


def _holds(client: MarkClient, path: str, version: int, text: str) -> bool:
    """Whether `version` exists and its body is `text` (a version the server will not give is not ours)."""
    if not version:
        return False
    response = client.fetch(path, version=version)
    return response.status == "ok" and response.body == text


def _current_version(client: MarkClient, path: str) -> int:
    """The newest version's number.  Only the number: the real server can pair it with an
    older version's body (its current link lags its newest file), so bodies are read by number."""
    latest = client.request("FETCH", path)
    if latest.status != "ok":
        raise MarkError.from_response(latest, f"FETCH {path}")
    return _int_field(latest, "version")


def _carries(text: str, before: str, after: str) -> bool:
    """Whether `text` holds the edit from `before` to `after`, line for line: as many of each
    line it added, and no more of each line it removed."""
    was, now, held = (Counter(split_lines(t)) for t in (before, after, text))
    return all(held[line] >= n for line, n in now.items() if n > was[line]) and \
        all(held[line] <= now[line] for line, n in was.items() if n > now[line])


def _first(repairs: List[int]) -> Optional[int]:
    return repairs[0] if repairs else None


# ------------------------------------------------------------------ sections

class _Heading(NamedTuple):
    """A heading and the section it opens: text[start:end], up to the next heading of its level or higher."""
    level: int
    text: str  # as written, without the #s
    anchor: str  # as demarkus renders it: "results", then "results-1", ... for repeats
    start: int
    end: int


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")  # a thematic break
_CONTAINER = re.compile(r" {0,3}(?:[-+*]|[0-9]{1,9}[.)])(?:[ \t]|$)| {0,3}>")  # a list item or a quote
_NESTING = re.compile(r"(?: {0,3}>[ \t]?| {0,3}(?:[-+*]|[0-9]{1,9}[.)])[ \t]+)*")  # the markers before a line
_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|<[^>]*>|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")


def _headings(text: str) -> List[_Heading]:
    """The document's headings, as demarkus's outline (CommonMark, by goldmark) finds them:
    ATX ("## Results", in a list item or quote too) and setext (a paragraph underlined with
    = or -) headings, never a line in fenced or indented code or an HTML comment.  Inline
    markup is stripped for anchors only as far as links, code, HTML and _emphasis_ go."""
    found: List[Tuple[int, str, int]] = []  # (level, text, start)
    fence: Optional[str] = None  # the opening fence of the code block we are in
    comment = False  # in an HTML comment, until its "-->"
    paragraph: List[str] = []  # the lines of the paragraph so far; it started at `start`
    start = offset = 0
    nested = False  # in a list item or quote, whose lines may go on lazily
    for line in text.splitlines(keepends=True):
        here, offset = offset, offset + len(line)
        line = line.rstrip("\r\n")
        inner = line[_NESTING.match(line).end():]
        if fence or comment:
            closing = _FENCE.match(inner)
            if comment and "-->" in line or fence and closing and closing.group(1).startswith(fence) \
                    and not inner[closing.end():].strip():
                fence, comment = None, False
            continue
        if paragraph and not nested and _SETEXT.match(line):  # the paragraph, underlined: a heading
            found.append((1 if "=" in line else 2, "".join(paragraph), start))
            paragraph = []
            continue
        atx, opening = _ATX.match(inner), _FENCE.match(inner)
        opens_comment = inner.lstrip(" ").startswith("<!--") and "-->" not in inner.split("<!--", 1)[1]
        if not line.strip() or atx or opening or opens_comment or _BREAK.match(line):
            paragraph, nested, comment = [], False, opens_comment
            fence = opening.group(1) if opening else None
            title = re.sub(r"(?:^|[ \t]+)#+$", "", (atx.group(2) or "").strip()).strip() if atx else ""
            if title:  # an empty heading opens no section, as in demarkus
                found.append((len(atx.group(1)), title, here))
        elif nested or _CONTAINER.match(line):
            paragraph, nested = [], True
        elif paragraph or not line.startswith(("    ", "\t")):  # not indented code
            start = start if paragraph else here
            paragraph.append(line.strip())
    headings, used = [], set()
    for k, (level, title, begin) in enumerate(found):
        slug = anchor = _slug(title)
        n = 0
        while anchor in used:
            n += 1
            anchor = f"{slug}-{n}"
        used.add(anchor)
        end = next((later for deeper, _, later in found[k + 1:] if deeper <= level), len(text))
        headings.append(_Heading(level, title, anchor, begin, end))
    return headings


def _slug(title: str) -> str:
    """A heading's anchor as GitHub makes it, before numbering: the text without its
    markup, lowercase letters, digits, "_" and "-" kept, spaces made "-"."""
    text = _MARKUP.sub(lambda m: m.group(1) or "", title).lower()
    return "".join("-" if c.isspace() else c for c in text if c.isalnum() or c in "_-" or c.isspace())


def _find_section(text: str, section: str, where: str) -> _Heading:
    """The heading `section` names in `text` ("## Results", "Results" or "#results");
    ValueError, naming the section and the anchors there are, when there is none or
    more than one."""
    headings, wanted = _headings(text), section.strip()
    level = _ATX.match(wanted)
    if level and not (level.group(2) or "").strip():
        level = None  # "#" alone names the empty anchor: a heading with no letters or digits
    if wanted.startswith("#") and not level:  # an anchor, then (as demarkus does) the slug of what follows "#"
        matches = [h for h in headings if h.anchor.lower() == wanted[1:].lower()] or \
                  [h for h in headings if h.anchor == _slug(wanted[1:])]
    else:  # a heading's text, "## Results" of that level only; else its slug
        title = (level.group(2) or "").strip() if level else wanted
        named = [h for h in headings if not level or h.level == len(level.group(1))]
        matches = [h for h in named if h.text == title] or [h for h in named if _slug(h.text) == _slug(title)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join("#" + h.anchor for h in matches)
        raise ValueError(f"section {section!r} names {len(matches)} headings of {where}; "
                         f"name one by its anchor: {names}")
    names = ", ".join(h.anchor for h in headings) or "(document has no headings)"
    raise ValueError(f"section {wanted} not found in {where}; available anchors: {names}")  # demarkus's words


# --------------------------------------------------------------- the client

class MarkClient:
    """A Mark server: over QUIC for mark://host[:port], over HTTP for http(s)://.

    One connection (QUIC) or keep-alive session (HTTP) for every request,
    and `timeout` seconds for each.  `verify` is True (check the server's
    certificate against the system's CAs), False (don't: a development
    server's self-signed certificate) or the path of a PEM file of CAs.
    Methods return every Mark status (conflict, not-found, ...) as a
    `MarkResponse` and raise `MarkError` only when no Mark response came
    back.  One client per thread.
    """

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        session: Optional[requests.Session] = None,
        allow_insecure_http: bool = False,
        proxies: Optional[Dict[str, str]] = None,
        verify: Union[bool, str] = True,
    ):
        if not isinstance(base_url, str):
            raise TypeError(f"base_url must be str, not {type(base_url).__name__}")
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https", "mark") or not parts.hostname:
            raise ValueError(f"base_url must be a mark://, http:// or https:// URL with a host, not {base_url!r}")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError("base_url must not carry a query, fragment or credentials")
        if parts.scheme == "mark" and parts.path.strip("/"):
            raise ValueError(f"a mark:// base_url is a host and port, without a path: {base_url!r}")
        if parts.scheme == "mark" and (session is not None or proxies):
            raise ValueError("session and proxies are for http(s):// URLs; mark:// speaks QUIC")
        if not isinstance(verify, (bool, str)) or (isinstance(verify, str) and not os.path.isfile(verify)):
            raise ValueError(f"verify must be True, False or the path of a PEM file of CAs, not {verify!r}")
        if token is not None and (not isinstance(token, str) or not token.strip()):
            raise TypeError("token must be a non-empty str or None")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
        if token and parts.scheme == "http" and not _is_loopback(parts.hostname) and not allow_insecure_http:
            raise ValueError(
                "refusing to send the token over plain http:// to a non-loopback host; "
                "use https://, or pass allow_insecure_http=True if the network is trusted"
            )
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._token = token
        self._proxies = dict(proxies or {})
        self._verify = verify
        self._versions: "OrderedDict[tuple, MarkResponse]" = OrderedDict()
        self._link = _quic_link(parts.hostname, parts.port or MARK_PORT, verify) if parts.scheme == "mark" else None
        self._own_session = session is None
        if session is None:
            session = self._new_session()
        else:
            session.proxies.update(self._proxies)
        self._session = session

    def _new_session(self) -> requests.Session:
        session = requests.Session()
        # Proxies come from the caller, never from HTTP_PROXY and the like:
        # a proxy would see the token, which travels in the body.
        session.trust_env = False
        session.proxies.update(self._proxies)
        session.verify = self._verify
        return session

    def __repr__(self) -> str:
        return f"MarkClient({self.base_url!r}, token={'<set>' if self._token else None})"

    def __enter__(self) -> "MarkClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._session.close()
        if self._link:
            self._link.close()

    def fetch(self, path: str, version: Optional[int] = None) -> MarkResponse:
        """FETCH the current document, or `version` of it (cached: versions never change;
        a version this client published is known without a FETCH, with the metadata it sent).

        `path` may end in "#anchor" (as demarkus renders a heading's): the
        answer's body is then that section only, with the document's
        metadata and `section: #anchor`, as demarkus's client answers;
        ValueError, naming the anchors there are, when it is not there.

        The current document's body is checked against the version its
        number names (read by number, and cached): the real server reads
        the body through a link that can lag its newest version, and an
        edit of that older body published as the newer number would undo
        the newer one.  Where they differ, the body (and content-hash) is
        the numbered version's, and the etag, which named the other, goes.
        """
        path, hash_sign, anchor = path.partition("#")
        if hash_sign:
            page = self.fetch(path, version)
            if page.status != "ok":
                return page
            found = _find_section(page.body, hash_sign + anchor, path)
            return MarkResponse(page.status, {**page.metadata, "section": hash_sign + anchor},
                                page.body[found.start:found.end])
        if version is None:
            latest = self.request("FETCH", path)
            number = latest.metadata.get("version", "")
            if latest.status != "ok" or "current-version" in latest.metadata or not _is_version(number) \
                    or not int(number):
                return latest  # not a current document (an error, or a version path such as /a.md/v3)
            pinned = self.fetch(path, version=int(number))
            if pinned.status != "ok" or pinned.body == latest.body:
                return latest
            metadata = {key: value for key, value in latest.metadata.items() if key != "etag"}
            metadata["content-hash"] = "sha256-" + hashlib.sha256(pinned.body.encode("utf-8")).hexdigest()
            return MarkResponse("ok", metadata, pinned.body)
        _check_int("version", version, minimum=1)
        key = (path, version)
        if key in self._versions:
            self._versions.move_to_end(key)
            return self._versions[key]
        response = self.request("FETCH", f"{path}/v{version}")
        if response.status == "ok":
            self._keep(key, response)
        return response

    def _keep(self, key: Tuple[str, int], response: MarkResponse) -> None:
        """Remember version key[1] of document key[0], the least recently used going first."""
        self._versions[key] = response
        if len(self._versions) > _CACHED_VERSIONS:
            self._versions.popitem(last=False)

    def publish(self, path: str, body: str, expected_version: Optional[int] = None,
                metadata: Optional[Dict[str, str]] = None) -> MarkResponse:
        """PUBLISH `body`; `expected_version` guards against overwriting newer writes.

        When the outcome is unknown (the answer was lost after the request
        went out, or `server-error`, which the real server can answer after
        storing the version), the versions after `expected_version` are
        read back.  This body as version expected + 1 is "created"; stored
        later, over versions in between, it is the "conflict" the real
        server answers for such a stale write (`server-version` names it).
        Not found: a lost answer raises MarkError saying the write may have
        landed, a server-error is returned as it came.
        """
        sent = dict(metadata or {})
        if expected_version is not None:
            _check_int("expected_version", expected_version, minimum=0)
            sent["expected-version"] = str(expected_version)
        return self._write("PUBLISH", path, sent, body, expected_version, metadata, lambda version: body)

    def append(self, path: str, text: str, expected_version: int,
               metadata: Optional[Dict[str, str]] = None) -> MarkResponse:
        """APPEND `text` after the current version, which must be `expected_version`.

        An unknown outcome is looked for as a publish's is: a version after
        `expected_version` that is the one before it with `text` appended.
        """
        _check_int("expected_version", expected_version, minimum=1)
        sent = {**(metadata or {}), "expected-version": str(expected_version)}
        return self._write("APPEND", path, sent, text, expected_version, metadata,
                           lambda version: _appended(_body(self, path, version - 1), text))

    def versions(self, path: str) -> MarkResponse:
        """VERSIONS: `total`, `current` and `chain-valid` of a document."""
        return self.request("VERSIONS", path)

    def request(self, verb: str, path: str, metadata: Optional[Dict[str, str]] = None,
                body: str = "") -> MarkResponse:
        """Send any Mark request; the token is added as `auth` metadata.

        `timeout` is the deadline for the whole call.  A request the server
        refuses unhandled (an empty answer: the real server's rate limit;
        HTTP 429 or 503) is sent again after a jittered, growing pause, at
        most REFUSED_TRIES times in all and never past the deadline; then
        MarkError("refused").  Redirects are never followed: any other
        answer but HTTP 200 is a transport failure.
        """
        return self._send(verb, path, metadata, body)

    def _send(self, verb: str, path: str, metadata: Optional[Dict[str, str]], body: str,
              stored: Optional[Callable[[], Optional[MarkResponse]]] = None) -> MarkResponse:
        """`request`; `stored()` says where a write went when an HTTP connection closed
        unanswered (a refusal, or a server that broke after storing it): None sends it again."""
        if not isinstance(verb, str) or not (verb.isascii() and verb.isalpha()):
            raise ValueError(f"verb must be a word of ASCII letters, such as FETCH, not {verb!r}")
        _check_path(path)
        _check_body(body)
        metadata = dict(metadata or {})
        if self._token:
            metadata["auth"] = self._token
        if self._link:
            # As the real client writes it: a metadata block only when there is
            # metadata, or when the body would otherwise be read as one.
            block = write_frontmatter(metadata) if metadata or body.startswith("---") else ""
            doing = f"{verb} {self.base_url}{path}"
            payload = f"{verb} {path}\n{block}{body}".encode("utf-8")
        else:
            block = write_frontmatter(metadata) if (metadata or body) else ""  # the binding's rule
            url = self.base_url + quote(path, safe="/")
            doing = f"{verb} {url}"
            payload = (block + body).encode("utf-8")
        deadline = time.monotonic() + self.timeout
        for tries in range(1, REFUSED_TRIES + 1):
            try:
                if self._link:
                    data, whole = self._link.exchange(payload, doing, deadline - time.monotonic(),
                                                      retry=verb in _READS, limit=MAX_RESPONSE_BYTES), True
                else:
                    data, whole = self._exchange(verb, url, payload, deadline)
                break
            except _Refused as refused:
                if refused.after_sending and stored is not None:
                    found = stored()
                    if found is not None:
                        return found
                pause = refused.retry_after if refused.retry_after is not None else _backoff(tries)
                if tries < REFUSED_TRIES and time.monotonic() + pause < deadline:
                    time.sleep(pause)
                    continue
                if refused.after_sending:
                    raise _AnswerLost("transport", f"{doing}: the connection closed without an answer, "
                                                   f"{tries} times") from None
                raise MarkError("refused", f"{doing}: the server refused the request {tries} times "
                                           "without handling it (over its rate limit?); try again later") from None
        try:
            metadata, body = read_frontmatter(data.decode("utf-8"))
            status = metadata.pop("status")
        except (UnicodeDecodeError, ValueError, KeyError):
            raise _AnswerLost("transport", f"{doing}: the answer is not a Mark response") from None
        digest = metadata.get("content-hash")
        if digest is None and not whole:
            raise _AnswerLost("transport", f"{doing}: the answer had no length and no content-hash, "
                                           "so whether it came whole is unknown")
        if digest is not None and digest != "sha256-" + hashlib.sha256(body.encode("utf-8")).hexdigest():
            raise MarkError("transport", f"{doing}: the body does not match its content-hash")
        return MarkResponse(status, metadata, body)

    def _exchange(self, verb: str, url: str, data: bytes, deadline: float) -> Tuple[bytes, bool]:
        """One HTTP exchange, by the deadline: the body of its HTTP 200 answer, and
        whether its length was known (else it ended when the connection did).

        The exchange runs on a worker thread so that the caller stops waiting
        at the deadline even while a server trickles its status line and
        headers, where requests can only bound each socket read.  A worker
        still waiting then keeps the session it has until it ends; this
        client goes on with a new one (a session passed in is kept).
        """
        doing = f"{verb} {url}"
        session = self._session
        outcome: list = []

        def exchange() -> None:
            try:
                http = session.request(
                    verb, url, data=data, timeout=max(0.001, deadline - time.monotonic()),
                    allow_redirects=False, stream=True,
                    headers={"Content-Type": "text/markdown; charset=utf-8", "Accept-Encoding": "identity"},
                )
                with http:
                    outcome.append(_read_answer(http, doing, deadline))
            except requests.RequestException as error:
                failure = f"{doing} failed: {type(error).__name__}"
                if _closed_unanswered(error):
                    outcome.append(_Refused(after_sending=True))
                else:
                    outcome.append((MarkError if _never_sent(error) else _AnswerLost)("transport", failure))
            except (MarkError, _Refused) as error:
                outcome.append(error)

        import threading  # the one thread this blocking client starts: the deadline's worker, here only

        worker = threading.Thread(target=exchange, name="mark-exchange", daemon=True)
        worker.start()
        worker.join(max(0.0, deadline - time.monotonic()))
        if not outcome:
            if self._own_session:
                self._session = self._new_session()
            raise _AnswerLost("transport", f"{doing}: no whole answer within the timeout")
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]

    def _write(self, verb: str, path: str, sent: Dict[str, str], body: str, expected_version: Optional[int],
               metadata: Optional[Dict[str, str]], stored_as: Callable[[int], str]) -> MarkResponse:
        """A PUBLISH or APPEND whose answer is checked, or looked for when unknown.

        `stored_as(version)` is the body the write makes when stored as `version`.
        """
        def stored() -> Optional[MarkResponse]:
            if expected_version is None:
                return None
            try:
                return self._stored(path, expected_version, stored_as, dict(metadata or {}))
            except MarkError:
                return None

        try:
            response = self._send(verb, path, sent, body, stored)
        except _AnswerLost as lost:
            found = stored()
            if found is None:
                raise _may_have_landed(lost.message, path) from None
            return found
        if response.status == "server-error":
            return stored() or response
        if response.status in ("ok", "created") and expected_version is not None:
            version = _int_field(response, "version")
            landed = (expected_version + 1,) if response.status == "created" else (expected_version,
                                                                                  expected_version + 1)
            if version not in landed:
                raise _may_have_landed(f"{verb} {path}: the server answered {response.status} as version "
                                       f"{version} to a write at expected-version {expected_version}", path)
            if verb == "PUBLISH":  # that version is this body: the next edit of it needs no FETCH
                self._keep((path, version), MarkResponse("ok", {**(metadata or {}), "version": str(version)}, body))
        return response

    def _stored(self, path: str, expected_version: int, stored_as: Callable[[int], str],
                metadata: Dict[str, str]) -> Optional[MarkResponse]:
        """Where a write at `expected_version` was stored, as the server would have answered it.

        "created" when it is version expected + 1; "conflict" naming the
        version when it was stored later, over versions between (the real
        server's stale write); None when no version up to the current one,
        and at most _LOOK_AHEAD of them, holds it.
        """
        versions = self.versions(path)
        if versions.status != "ok":
            return None
        last = min(_int_field(versions, "current"), expected_version + _LOOK_AHEAD)
        for version in range(expected_version + 1, last + 1):
            stored = self.fetch(path, version=version)
            if stored.status == "ok" and stored.body == stored_as(version) and all(
                    stored.metadata.get(key, value) == value for key, value in metadata.items()):
                if version == expected_version + 1:
                    return MarkResponse("created", {"version": str(version),
                                                    "modified": stored.metadata.get("modified", "")}, "")
                return MarkResponse("conflict", {"server-version": str(version),
                                                 "your-version": str(expected_version)}, "")
        return None


def _quic_link(host: str, port: int, verify: Union[bool, str]):
    """The QUIC connection of a mark:// client: mark_quic.py, which needs aioquic."""
    try:
        from mark_quic import QuicLink
    except ImportError:
        raise ImportError("mark:// URLs need aioquic and mark_quic.py beside mark_publish.py: "
                          "pip install 'mark-publish[quic]'") from None
    return QuicLink(host, port, verify)


def _may_have_landed(why: str, path: str) -> MarkError:
    return MarkError("transport", f"{why}; the write may have landed: fetch {path} before retrying",
                     may_have_landed=True)


class _Refused(Exception):
    """The server refused a request without handling it; `retry_after`: seconds it asked for.

    `after_sending`: the connection closed without a byte of answer, which
    a server that broke after handling the request does too.
    """

    def __init__(self, retry_after: Optional[float] = None, after_sending: bool = False):
        super().__init__("refused")
        self.retry_after, self.after_sending = retry_after, after_sending


def _backoff(tries: int) -> float:
    """The pause before sending a refused request again: about 0.1 s, doubling, jittered, at most 2 s."""
    return min(2.0, 0.1 * 2 ** (tries - 1)) * random.uniform(0.5, 1.5)


def _closed_unanswered(error: requests.RequestException) -> bool:
    """Whether the server ended the connection without a byte of answer (refused, or broke)."""
    reason = error.args[0] if error.args else None
    return isinstance(reason, urllib3_exceptions.ProtocolError) and any(
        isinstance(arg, RemoteDisconnected) for arg in reason.args)


class _AnswerLost(MarkError):
    """A transport failure after the request went out: a write may have landed."""

    def __init__(self, status: str, message: str):
        super().__init__(status, message, may_have_landed=True)


def _never_sent(error: requests.RequestException) -> bool:
    """Whether a request failed before any byte of it could reach the server."""
    if isinstance(error, requests.ConnectTimeout):
        return True
    reason = getattr(error.args[0] if error.args else None, "reason", None)
    return isinstance(error, requests.ConnectionError) and isinstance(reason, urllib3_exceptions.NewConnectionError)


def _read_answer(http: requests.Response, doing: str, deadline: float) -> Tuple[bytes, bool]:
    """The body of an HTTP 200 answer, read by the deadline, within MAX_RESPONSE_BYTES,
    and whether it came with its length (Content-Length or chunks)."""
    if http.status_code in (429, 503):
        after = http.headers.get("Retry-After", "")
        raise _Refused(float(after) if _is_digits(after) and len(after) < 6 else None)
    if http.status_code != 200:
        raise _AnswerLost("transport", f"HTTP {http.status_code} from {doing}: not a Mark server? "
                                       "(redirects are not followed)")
    if http.headers.get("Content-Encoding", "identity").lower() != "identity":
        raise _AnswerLost("transport", f"{doing}: the answer came compressed; Mark answers are not")
    announced = http.headers.get("Content-Length")
    if announced is not None and not _is_digits(announced):
        raise _AnswerLost("transport", f"{doing}: bad Content-Length {announced!r}")
    if announced is not None and int(announced) > MAX_RESPONSE_BYTES:
        raise _AnswerLost("transport", f"{doing}: the answer is larger than {MAX_RESPONSE_BYTES} bytes")
    chunks, size = [], 0
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _AnswerLost("transport", f"{doing}: no whole answer within the timeout")
            connection = http.raw.connection
            if connection is not None and connection.sock is not None:
                connection.sock.settimeout(remaining)  # so the worker itself stops at the deadline
            chunk = http.raw.read1(65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise _AnswerLost("transport", f"{doing}: the answer is larger than {MAX_RESPONSE_BYTES} bytes")
            chunks.append(chunk)
    except (OSError, urllib3_exceptions.HTTPError) as error:
        raise _AnswerLost("transport", f"{doing}: the answer was cut off ({type(error).__name__})") from None
    if announced is not None and size != int(announced):
        raise _AnswerLost("transport", f"{doing}: the answer was cut off ({size} of {announced} bytes)")
    chunked = "chunked" in http.headers.get("Transfer-Encoding", "").lower()
    return b"".join(chunks), announced is not None or chunked


# ---- frontmatter codec: this block is the same, byte for byte, in mark_publish.py
# ---- and mark_server.py (each file stays standalone); test_codec.py checks it.

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+/=~-]*\Z")  # no YAML indicator, space or colon
# What YAML reads as a number, a bool (YAML 1.1's too), null or a date, not a string.
_NOT_A_STRING = re.compile(
    r"(?:[-+]?(?:0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)"
    r"|[yYnN]|[Yy]es|YES|[Nn]o|NO|[Tt]rue|TRUE|[Ff]alse|FALSE|[Oo]n|ON|[Oo]ff|OFF|[Nn]ull|NULL"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt].*)?)\Z")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
    "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def write_frontmatter(metadata: Dict[str, str]) -> str:
    """A Mark frontmatter block, keys sorted, values written as Go's yaml.v3 writes them."""
    lines = []
    for key in sorted(metadata):
        value = metadata[key]
        if not isinstance(key, str) or not _PLAIN_KEY.match(key):
            raise ValueError(f"metadata key {key!r} must be letters, digits, '_', '-' or '.'")
        if not isinstance(value, str):
            raise TypeError(f"metadata value for {key!r} must be str, not {type(value).__name__}")
        lines.append(f"{key}: {write_scalar(value)}\n")
    return "---\n" + ("".join(lines) or "\n") + "---\n"


def write_scalar(value: str) -> str:
    """`value` as a YAML scalar that Go's yaml.v3 reads back exactly, in yaml.v3's style.

    Plain where nothing in it could mean anything but a string (a token,
    a hex etag, "ok"); otherwise double-quoted: "3", "2026-12-03T10:41:15Z",
    "true", "a: b".  So a request reads byte for byte as the real client's.
    """
    if _PLAIN_VALUE.match(value) and not _NOT_A_STRING.match(value):
        return value
    out = []
    for char in value:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\x{code:02x}")
        elif char in "\ufeff\ufffe\uffff" or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        elif code > 0xFFFF:
            out.append(f"\\U{code:08x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def read_frontmatter(text: str):
    """Split a Mark message into (metadata, body); ValueError when malformed.

    The block starts with "---\\n" at byte 0 and ends at the first
    "\\n---\\n"; the body after it is returned byte for byte.
    """
    if not text.startswith("---\n"):
        raise ValueError("no frontmatter")
    end = text.find("\n---\n", 3)
    if end < 0:
        raise ValueError("frontmatter is not closed")
    metadata = {}
    for line in text[4:end].split("\n"):
        if not line.strip():
            continue
        if line[0] in " \t":
            raise ValueError(f"nested or indented YAML is not Mark frontmatter: {line!r}")
        key, rest = _read_scalar(line, key=True)
        if not rest.startswith(":") or rest[1:2] not in ("", " "):
            raise ValueError(f"not a 'key: value' line: {line!r}")
        value, rest = _read_scalar(rest[1:].strip(" "), key=False)
        if rest.strip(" ") and not rest.strip(" ").startswith("#"):
            raise ValueError(f"trailing text after value: {line!r}")
        metadata[key] = value
    return metadata, text[end + 5:]


def _read_scalar(text: str, key: bool):
    """Read a plain, single- or double-quoted scalar; return (value, the rest)."""
    if text.startswith("'"):
        match = re.match(r"'((?:[^']|'')*)'", text)
        if not match:
            raise ValueError(f"unterminated single-quoted scalar: {text!r}")
        return match.group(1).replace("''", "'"), text[match.end():]
    if text.startswith('"'):
        return _read_double_quoted(text)
    if key:
        end = text.find(":")
        value, rest = (text, "") if end < 0 else (text[:end], text[end:])
    else:
        comment = text.find(" #")
        value, rest = (text, "") if comment < 0 else (text[:comment], text[comment:])
    value = value.strip(" ")
    if (key and not value) or value[:1] in ("|", ">", "[", "{", "&", "*", "!", "%", "@", "`"):
        raise ValueError(f"unsupported YAML scalar: {text!r}")
    return value, rest


def _read_double_quoted(text: str):
    out, i = [], 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(out), text[i + 1:]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        escape = text[i + 1:i + 2]
        if escape in _UNESCAPES:
            out.append(_UNESCAPES[escape])
            i += 2
        elif escape in _HEX_ESCAPES:
            digits = text[i + 2:i + 2 + _HEX_ESCAPES[escape]]
            if len(digits) != _HEX_ESCAPES[escape] or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"bad \\{escape} escape in {text!r}")
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                raise ValueError(f"\\{escape}{digits} is not a character")
            out.append(chr(code))
            i += 2 + len(digits)
        else:
            raise ValueError(f"unknown escape \\{escape} in {text!r}")
    raise ValueError(f"unterminated double-quoted scalar: {text!r}")


# ---- end of frontmatter codec


# ---------------------------------------------------------------- helpers

def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, not {value}")


def _check_path(path) -> None:
    if not isinstance(path, str):
        raise TypeError(f"path must be str, not {type(path).__name__}")
    if not path.startswith("/"):
        raise ValueError(f"path must start with '/': {path!r}")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in path):
        raise ValueError(f"path must not contain NUL or control characters: {path!r}")


def _check_body(body) -> None:
    if not isinstance(body, str):
        raise TypeError(f"body must be str, not {type(body).__name__}")


def _check_publish(path, body, expected_version, max_retries, on_conflict="fail") -> None:
    _check_path(path)
    _check_body(body)
    _check_int("expected_version", expected_version, minimum=0)
    _check_int("max_retries", max_retries, minimum=1)
    if on_conflict not in ("fail", "merge", "candidate"):
        raise ValueError(f'on_conflict must be "fail", "merge" or "candidate", not {on_conflict!r}')


def _int_field(response: MarkResponse, key: str) -> int:
    """A version number from the response's metadata; MarkError if it is not one."""
    value = response.metadata.get(key, "")
    if not _is_version(value):
        raise MarkError("transport", f"Mark response {response.status!r} has no version number {key!r} "
                                     "(ASCII digits, at most 18)",
                        response.metadata)
    return int(value)


def _is_version(text: str) -> bool:
    """A version number: ASCII digits, at most 18 of them (a sane integer, as the server's own)."""
    return _is_digits(text) and len(text) <= 18


def _is_digits(text: str) -> bool:
    """ASCII digits only: no sign, space, underscore or other script's digits."""
    return bool(text) and text.isascii() and text.isdigit()


def _appended(old: str, text: str) -> str:
    """What APPEND makes of `old`: a newline only where it lacks one, then `text`."""
    return old + ("" if old.endswith("\n") else "\n") + text


# --------------------------------------------------------------------- CLI

def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m mark_publish`: publish a file or stdin, or one section of the document;
    exit 0 published, 1 not (a conflict, a candidate), 2 error."""
    parser = argparse.ArgumentParser(
        prog="mark-publish",
        description="Publish a markdown body to a Mark server. The token comes from $MARK_TOKEN.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--server", required=True,
                        help="the server: mark://host[:port] (QUIC) or an http(s):// base URL")
    parser.add_argument("--insecure", action="store_true",
                        help="do not check the server's certificate (a development server's)")
    parser.add_argument("path", help="document path, e.g. /notes.md")
    parser.add_argument("--expected-version", type=int, metavar="N",
                        help="the version the body was edited from; 0 creates the document "
                             "(required, but for --section)")
    parser.add_argument("--on-conflict", choices=("fail", "merge", "candidate"),
                        help="if someone published since N: fail (the default: answer the conflict), merge "
                             "(publish a clean merge), or candidate (print the merge, publish nothing)")
    parser.add_argument("--section", metavar="S",
                        help="replace only section S ('## Results', 'Results' or '#results') with the body, "
                             "its heading line included, on the latest version; with N, a section changed "
                             "since N is merged")
    parser.add_argument("--max-retries", type=int, default=3, metavar="N",
                        help="merge attempts while others keep publishing (default 3)")
    parser.add_argument("--file", help="read the body from FILE instead of stdin")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"deadline of each request (default {DEFAULT_TIMEOUT:g})")
    args = parser.parse_args(argv)
    if args.section is None and args.expected_version is None:
        parser.error("--expected-version is required (but for --section)")
    if args.section is not None and args.on_conflict is not None:
        parser.error("--on-conflict is for whole documents: a --section write always goes onto the latest version")
    try:
        if args.file:
            with open(args.file, "rb") as file:
                data = file.read()
        else:
            data = sys.stdin.buffer.read()
        body = data.decode("utf-8")
        with MarkClient(args.server, token=os.environ.get("MARK_TOKEN") or None,
                        timeout=args.timeout, verify=not args.insecure) as client:
            if args.section is not None:
                result = update_section(client, args.path, args.section, body, args.expected_version,
                                        max_retries=args.max_retries)
            else:
                result = mark_publish(client, args.path, body, args.expected_version,
                                      on_conflict=args.on_conflict or "fail", max_retries=args.max_retries)
    except (MarkError, ValueError, TypeError, OSError, ImportError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else error
        print(f"mark-publish: {reason}".split("\n")[0], file=sys.stderr)
        return 2
    sys.stdout.buffer.write(result.to_text().encode("utf-8"))
    sys.stdout.flush()
    return 0 if result.status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
