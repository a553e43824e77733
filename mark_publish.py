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
          --on-conflict merge --file notes.md      # exit 0 ok, 1 conflict or merge-candidate, 2 error

What this file needs beside it (and, for the CLI's `--section` only,
`mark_sections.py`, whose `update_section` `main` imports then): `diff3.py`, whose `diff3(base, ours,
theirs)` returns `Merge(merged, had_conflict)`, a NamedTuple this file
unpacks as `merged, had_conflict` (the text, with conflict markers where
the sides overlap; whether it has any); and `mark_client.py` (with
`requests`), whose calls are these, each one Mark request but where said:

    client.publish(path, body, E, metadata)  PUBLISH at E.  Answers ok or created with `version`
                                             E + 1 (the client raises MarkError for any other
                                             number), or conflict with `server-version`.  A lost
                                             answer is looked up by the client (requests of its
                                             own): found, it is answered as the server would
                                             have (created; or conflict naming a later version
                                             that holds it, a stale write, which `_our_write`
                                             then finds); else it is sent again, and a resend's
                                             conflict not found is answered as it came (the
                                             conflict `_our_write` then checks); a call that
                                             ends unanswered raises MarkError, may_have_landed
    client.fetch(path, version=N)            FETCH /vN, unless the client holds N: it read N by
                                             number before with a body (an empty one is never kept),
                                             or published N itself and was answered ok or created
                                             (so a version a merge just made is never fetched); it
                                             keeps the last CACHED_VERSIONS (64).  Every body, via `_read`
    client.request("FETCH", path)            FETCH, always sent: the newest version's number only
    client.versions(path), client.append     VERSIONS and APPEND, for `mark_append`
    client.timeout                           each request's deadline, and the call's time (below)
    MarkResponse.number(key)                 a version number out of an answer's metadata
    MarkError(status, message, metadata, may_have_landed), MarkError.from_response(response, doing)
    check_path, check_str, check_int, DEFAULT_TIMEOUT   argument checks; the CLI's default

Mark documents are versioned and immutable.  The versions this file
speaks of, by one name each: E, the version a PUBLISH was made against
(`expected_version` for the call's first, the version a merge round read
for a later one; `sent.against` in the code); C, the version a conflict
names, or a merge round reads (`current`); L = C - 1, when C is a stale
write of ours, the other writer's version it dropped (`lost`); the undo,
L's exact body published again against C.  A PUBLISH loses to any
writer that came in between with status `conflict`, naming C.  Whether C
is the call's own write is asked first, before anything needs the base
(`_our_write`, the one place it is decided): "landed" (C = E + 1 holds
the body: the server stored it after all, and the call answers `ok`);
"stale" (a later C holds it: the server stored it over L, and the call
puts L back, as "Stale writes" below says, in every mode of
`mark_publish`); or not ours.  When C cannot be read (`_read` says when
a read fails, an empty body included, and how often it is read again),
the call raises MarkError naming it (`metadata["unread-version"]`,
`may_have_landed` True) rather than answer as if nothing of ours had
landed.  Then, by `on_conflict`:

- "fail" (the default): answers `conflict` (`your-version`, `current-version`).
- "candidate": answers `merge-candidate`, diff3(base, ours, C) unpublished
  (after an undo, against the undo), with `publish-at-version`, for an
  agent that reads a merge before it lands; with the base gone,
  `reason: base-unavailable`.
- "merge": the merge loop (`_publish_loop`).  Each round reads C by
  number and PUBLISHes diff3(base, ours, C) against it; base is the
  version the caller edited, read once.  The loop ends in one of three
  kinds: "ok" (a PUBLISH landed); "overlap" (the merge has conflict
  markers: nothing is published, and the answer is `conflict, mergeable:
  false` with the marked body, for a person or an LLM); "contention"
  (the caller's PUBLISHes are spent: `reason: contention`, `retries:
  max_retries`, `mergeable: false`, no merge published, clean or not).  A
  PUBLISH that conflicts again names the next C; if that does not hold
  what was just sent (yet another writer), the loop first waits a random,
  growing while (RETRY_PAUSE) and reads the newest version's number
  instead, unless the pause would end past the call's time (then: no
  pause, the version named).

The call's time is `client.timeout` seconds from its start: its pauses,
its reads again of a failed read and a repair's PUBLISHes happen within
it; each request has its own deadline besides.

What goes over the wire, request by request (a FETCH /vN is not sent when
the client holds N, as said above; the newest number is always asked).
test_repair.py plays each row:

    no race          PUBLISH at E -> ok or created
    landed after all PUBLISH at E -> conflict naming E + 1; FETCH /v(E+1) holds the body: ok
    fail             PUBLISH at E -> conflict C; FETCH /vC (is it ours?)
    candidate        PUBLISH at E -> conflict C; FETCH /vC; FETCH /vE (the base)
    merge            PUBLISH at E -> conflict C; FETCH /vC; FETCH /vE; PUBLISH the merge at C
    merge, overlap   PUBLISH at E -> conflict C; FETCH /vC; FETCH /vE (nothing published)
    base gone        ... FETCH /vE -> not-found; FETCH (the newest number): base-unavailable
    C unread         PUBLISH at E -> conflict C; FETCH /vC fails READS times: MarkError naming C
    lost again       PUBLISH at C -> conflict C2; FETCH /vC2 (is it ours?); pause;
                     FETCH (the newest number, N); FETCH /vN; PUBLISH the merge at N
                     (no PUBLISH left: FETCH /vC2 only, then contention; no time
                     left for the pause: neither it nor the newest number, N = C2)
    stale write      PUBLISH at E -> conflict C > E + 1 and FETCH /vC holds the body: it was
                     stored over L.  Merge mode: FETCH /vE, FETCH /vL; PUBLISH diff3(E, L, C)
                     at C if clean (lost again: as above, on the repair's PUBLISHes).  Else,
                     any mode: FETCH /vL; PUBLISH L's body at C (the undo); the mode's
                     answer (/vE gone: the undo; E = expected_version: then base-unavailable)

Version 0 is the empty document, never fetched.

Stale writes.  Stored as C over another writer's version L, the write
dropped L's edits; the call puts back what a correct server would have
left.  In merge mode, if E can be read and diff3(E, L, newest) is clean,
it publishes that (`ok`, `repaired: L`, `their-version`: C or a later
one).  Otherwise (any mode; in merge mode when that merge overlaps while
the newest is still C, or E is gone) it publishes the undo (refused if
anyone built on C) and answers as that mode answers a conflict, the undo
being the current version, with `repaired: L`.  The undo, like every
PUBLISH of the call, carries the caller's `metadata`, not L's: the call
is what publishes it.  Putting L back comes before the caller's own
retries: it spends PUBLISHes of its own, at most REPAIR_PUBLISHES (12) a
call beyond the caller's 1 + `max_retries`, and only within the call's
time, pauses between lost races included.  It raises
MarkError("overwritten") with `metadata["lost-version"] = str(L)`, and
publishes nothing more, only when a person must decide (the newest meets
a version built on ours since; the undo is refused for another writer's
version), L cannot be read, or the call's time or those PUBLISHes ran
out; when the undo was itself stored over yet another writer's version,
it names that one instead (L is back, it is not).  A version counts as
the call's by its body alone: another writer's with the very same body
counts too.  Only the versions a conflict names are checked: the real
server's answer to a stale write names the version it stored, so each
is found; one stored at a version no answer names (a server that names
another) is not.

`_Budget` counts a call's `client.publish` calls, not the PUBLISHes on
the wire: one call may send its PUBLISH more than once (the client's
resends after a refusal, or after an answer lost and not found by its
look-up: mark_client.py's table), and that counts as one.  What is
published is the caller's body, a clean diff3 merge, or an earlier
version's exact body, never a conflict marker the caller did not send:
not a guarantee of the budget, but because a merge with markers is never
published.

Every MarkError a call raises, (status, may_have_landed), and where:

- the client's, as they come (mark_client.py lists them): a request's
  transport failure or refusal, True once a copy of a write went out;
  `MarkResponse.number`'s, an answer without the version it must name.
- `_landed`: (the answer's status, False), a PUBLISH or APPEND answered
  neither ok, created nor conflict (`not-permitted`, `server-error`, ...).
- `_read`, after READS reads of a body the call needs (E, the C a merge
  round reads; fewer when the call's time runs short): the last failure,
  as the client raised it (a read's: `may_have_landed` False), or the
  answer's status (`from_response`, False), or ("transport", False) for an
  empty body.  E answered `not-found` is `reason: base-unavailable`
  instead, but inside a repair, where it is the undo (`_repair`).
  `_merge` raises E's failure with True when E is unread after a stale
  write of ours (it undoes that write first).
- `_our_write`: (the failure's status, True), with
  `metadata["unread-version"] = str(C)`: C, which may be ours, unread.
- `_current_version` and `mark_append`: (the answer's status, False),
  the document's FETCH or VERSIONS answered other than ok.
- `_overwritten`, from `_repair`, `_undo` and `_read_lost`:
  ("overwritten", True), with `metadata["lost-version"]`, as "Stale
  writes" says.

`publish_edit` runs the same loop for any edit, from any `version`;
`mark_sections.update_section` writes one section through it (and is
needed for the CLI's `--section`); the example above runs on
`mark_server.py`, the reference server.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass, fields
from typing import Callable, Dict, NamedTuple, Optional, Sequence, Tuple

from diff3 import diff3
from mark_client import DEFAULT_TIMEOUT, MarkClient, MarkError, MarkResponse, check_int, check_path, check_str

__version__ = "0.3.0"  # the release this file is from; vendored copies keep saying it
__all__ = [
    "MarkClient", "MarkResponse", "MarkError", "PublishResult",
    "mark_publish", "after_conflict", "merge_and_publish", "merge_candidate", "mark_append", "publish_edit",
    "main",
]

# After a lost race, a merge waits at random (writers that lost together do not come back together)
# up to RETRY_PAUSE * 2 ** (n - 1) seconds, n the PUBLISHes spent from the budget the loop runs on:
# the caller's edit's (mark_publish's first included, not the first of after_conflict's caller), or
# a repair's own, so a repair's pauses start again from RETRY_PAUSE.  A pause that would end past
# the call's time is skipped (`_step_aside`).
# `python bench.py publish` at 8 writers: 0.02 s escalates ~35% of edits, 0.3 s ~1%.
RETRY_PAUSE = 0.3

# Putting back another writer's version a stale write of ours dropped (a repair) may spend this many
# PUBLISHes of its own in a call, beyond the caller's 1 + max_retries, while the call's time lasts.
REPAIR_PUBLISHES = 12

# A version whose read fails (an error status, a transport failure, an empty body) is read this many
# times at most, while the call's time lasts, after pauses of READ_PAUSE, 4 times that, 16 times that:
# whether it is our write must not rest on one lost answer.  Under load the real server has answered a
# version it was still writing as empty to three reads in a row, and filled it within milliseconds.
READS = 4
READ_PAUSE = 0.01


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
    retries: Optional[int] = None  # with reason contention: max_retries, all of them spent
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
    "candidate" merges and publishes no merge, for the caller to read it
    first.  In every mode a stale write of the call's own is put back
    (the module docstring's "Stale writes").  At most 1 + `max_retries`
    `client.publish` calls for the edit, and REPAIR_PUBLISHES more for
    putting versions back (`_Budget` says what counts).  Raises `MarkError`
    where the module docstring lists; a base answered `not-found` is
    `reason: base-unavailable`.
    """
    _check_publish(path, body, expected_version, max_retries, on_conflict)
    budget = _budget(1 + max_retries, client.timeout)
    response = budget.publish(client, path, body, expected_version, metadata)
    version = _landed(response, f"PUBLISH {path}")
    if version is not None:
        return PublishResult("ok", version=version, merged=False)
    return _after_conflict(client, path, _Sent(body, expected_version), response.number("server-version"),
                           on_conflict, budget, metadata)


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
    """What `mark_publish` does once its PUBLISH of `body` at `expected_version` answered
    `conflict`, as the module docstring says, with at most `max_retries` more `client.publish` calls for the
    edit (and REPAIR_PUBLISHES to put back what a stale write of it dropped)."""
    _check_publish(path, body, expected_version, max_retries, on_conflict)
    return _after_conflict(client, path, _Sent(body, expected_version), conflict.number("server-version"),
                           on_conflict, _budget(max_retries, client.timeout), metadata)


def merge_and_publish(
    client: MarkClient,
    path: str,
    body: str,
    expected_version: int,
    max_retries: int = 3,
    metadata: Optional[Dict[str, str]] = None,
) -> PublishResult:
    """Merge `body` (edited from `expected_version`) onto the newest version and publish it:
    at most `max_retries` `client.publish` calls for the edit (and REPAIR_PUBLISHES to put back what a stale
    write of it dropped).

    If the newest version is `body`, published by the caller before, it
    counts as this call's write: landed, or a stale write put back, as
    `mark_publish` does.  When the version edited from is gone (never was,
    or dropped by the server's retention), returns `status: conflict,
    reason: base-unavailable`: fetch the document and redo the edit.
    """
    _check_publish(path, body, expected_version, max_retries)
    budget = _budget(max_retries, client.timeout)
    return _merge(client, path, _Sent(body, expected_version), _current_version(client, path), budget, metadata)


def merge_candidate(client: MarkClient, path: str, body: str, expected_version: int) -> PublishResult:
    """The merge `merge_and_publish` would publish (unless the newest version is a stale write of `body`,
    which that repairs), with nothing published: for an agent to read first.

    Returns one of three answers: `status: merge-candidate` with
    `publish_at_version` (the version to publish it against) and
    `has_markers` (whether the body holds conflict markers to resolve
    first); `ok` when the newest version is `body` as expected + 1 (it
    landed); or `conflict, reason: base-unavailable` when the version
    edited from is gone.  It publishes nothing, so a stale write of `body`
    is merged with as any other version, not repaired.  Raises as
    `mark_publish` does; a newest version it cannot read may be `body`.
    """
    _check_publish(path, body, expected_version, 1)
    until = time.monotonic() + client.timeout
    current, sent = _current_version(client, path), _Sent(body, expected_version)
    if _our_write(client, path, sent, current, until) == "landed":
        return PublishResult("ok", version=current, merged=False)
    return _candidate(client, path, sent, current, None, until)


def publish_edit(
    client: MarkClient,
    path: str,
    edit: Callable[[str], Tuple[str, bool]],
    version: int,
    max_retries: int = 3,
    metadata: Optional[Dict[str, str]] = None,
) -> PublishResult:
    """PUBLISH `edit(body of version)` against `version`; after a lost race, `edit` of the newest
    version, read after a pause (with no time left for it: of the version the conflict names).

    `edit` returns the text to publish and whether it holds an overlap (a
    text with conflict markers, published never).  At most 1 + `max_retries`
    `client.publish` calls for the edit, and REPAIR_PUBLISHES to put back what a stale
    write dropped.  Answers in `mark_publish(..., on_conflict="merge")`'s
    shapes, with `base_version` (`ok`) or `your_version` (`conflict`) set
    to `version`, but for one: every `ok` is `merged: true` with the
    published `body`, uncontested too (the edit made the body: there is no
    caller's body to have published plainly).
    """
    check_path(path)
    check_int("version", version, minimum=0)
    check_int("max_retries", max_retries, minimum=1)
    budget = _budget(1 + max_retries, client.timeout)
    outcome = _publish_loop(client, path, edit, version, None, budget, metadata)
    return _answer(outcome, False, version, version, max_retries)


def mark_append(client: MarkClient, path: str, body: str,
                expected_version: Optional[int] = None) -> PublishResult:
    """APPEND `body` to the end of the document, once; never merges.

    With no `expected_version` (or 0), the current version is read first.
    A `conflict` can name a version that holds this APPEND, stored late
    over another writer's version, which it dropped (a stale write; the
    client's look-up answers it so too): mark_append neither checks nor
    puts it back.  Fetch `current_version` before appending again, or the
    entry may be there twice.
    """
    check_path(path)
    check_str("body", body)
    if not body:
        raise ValueError("body must not be empty for an APPEND")
    if expected_version is not None:
        check_int("expected_version", expected_version, minimum=0)
    if not expected_version:
        response = client.versions(path)
        if response.status != "ok":
            raise MarkError.from_response(response, f"VERSIONS {path}")
        expected_version = response.number("current")
    response = client.append(path, body, expected_version)
    version = _landed(response, f"APPEND {path}")
    if version is not None:
        return PublishResult("ok", version=version, merged=False)
    return PublishResult("conflict", your_version=expected_version, current_version=response.number("server-version"))


# ----------------------------------------------------------- the merge loop

class _Sent(NamedTuple):
    """A body published for this edit (by this call, or by its caller before `merge_and_publish`),
    and E, the version it was published against."""
    text: str
    against: int


class _Outcome(NamedTuple):
    """How `_publish_loop` ended (its docstring's table): `kind` "ok", "overlap" or "contention";
    `repaired`: L, the version a stale write of ours went over, put back."""
    kind: str
    version: int
    text: str = ""
    their_version: int = 0
    repaired: Optional[int] = None


class _Budget:
    """The PUBLISHes a call has left, and until when it may pause between them and read again.

    Each public entry point that PUBLISHes (not `mark_append`: one APPEND)
    makes one with `_budget` before its first PUBLISH, and every
    `client.publish` it makes goes through the `publish` of that budget or
    of its `repair` (`publish` spends one, whatever the client sends for
    it: the module docstring's `_Budget` paragraph; its callers check
    `left` first), so that no path makes more than the call was given.
    The caller's own edit (its body, merges of it, after an undo too) spends `tries`: 1 + `max_retries` for
    `mark_publish` and `publish_edit`, `max_retries` for `after_conflict`
    (its caller sent the first) and `merge_and_publish`.  Putting back
    another writer's version spends `repair`'s REPAIR_PUBLISHES instead, so
    that the caller's spent retries never stop a repair, and only while the
    call's time lasts.
    `until`: the end of the call's pauses and read-agains, `timeout` seconds
    after it began, the same for both.
    """

    def __init__(self, tries: int, until: float, repair: Optional[_Budget] = None):
        self.tries, self.spent, self.until = tries, 0, until
        self.repair = repair or self  # a repair's own repairs spend the same allowance

    @property
    def left(self) -> int:
        if self.repair is self and time.monotonic() >= self.until:
            return 0  # a repair publishes only within the call's time
        return self.tries - self.spent

    def publish(self, client: MarkClient, path: str, body: str, against: int,
                metadata: Optional[Dict[str, str]]) -> MarkResponse:
        self.spent += 1
        return client.publish(path, body, against, metadata)


def _budget(tries: int, seconds: float) -> _Budget:
    """A call's budget: `tries` PUBLISHes for its edit, REPAIR_PUBLISHES for repairs, `seconds` for both."""
    until = time.monotonic() + seconds
    return _Budget(tries, until, _Budget(REPAIR_PUBLISHES, until))


def _after_conflict(client: MarkClient, path: str, sent: _Sent, current: int, on_conflict: str, budget: _Budget,
                    metadata: Optional[Dict[str, str]]) -> PublishResult:
    """What a PUBLISH of `sent` that answered conflict naming C = `current` comes to, by `on_conflict`."""
    if on_conflict == "merge":
        return _merge(client, path, sent, current, budget, metadata)
    write = _our_write(client, path, sent, current, budget.until)
    if write == "landed":
        return PublishResult("ok", version=current, merged=False)
    repaired = None
    if write == "stale":
        repaired = current - 1
        current = _undo(client, path, repaired, current, budget.repair, metadata)
    if on_conflict == "fail":
        return PublishResult("conflict", your_version=sent.against, current_version=current, repaired=repaired)
    return _candidate(client, path, sent, current, repaired, budget.until)


def _merge(client: MarkClient, path: str, sent: _Sent, current: int, budget: _Budget,
           metadata: Optional[Dict[str, str]]) -> PublishResult:
    """The merge loop of `sent` onto version C = `current` and on, for "merge" and `merge_and_publish`.

    Whether C is our write is asked before the base (E) is read, so that a
    stale write is put back (undone) even when E is gone or unread (then
    E's error is raised, `may_have_landed` True); with E there, the loop's
    first round finds it again and repairs it.
    """
    write = _our_write(client, path, sent, current, budget.until)
    if write == "landed":
        return PublishResult("ok", version=current, merged=False)
    try:
        base = _read(client, path, sent.against, budget.until, may_be_gone=True)
    except MarkError as error:
        if write != "stale":
            raise
        _undo(client, path, current - 1, current, budget.repair, metadata)  # L back first: it needs no base
        raise MarkError(error.status, f"{error.message}; this call's write, stored over version {current - 1}, "
                                      "was undone", error.metadata, may_have_landed=True) from error
    if base is None:
        repaired = None
        if write == "stale":  # without the base nothing can be merged: only the undo puts L back
            repaired = current - 1
            _undo(client, path, repaired, current, budget.repair, metadata)
        return _base_unavailable(client, path, sent.against, repaired)
    retries = budget.left
    outcome = _publish_loop(client, path, _change(base, sent.text), current, sent, budget, metadata)
    return _answer(outcome, outcome.text == sent.text, sent.against, sent.against, retries)


def _answer(outcome: _Outcome, plain: bool, base_version: int, your_version: Optional[int],
            retries: int) -> PublishResult:
    """The caller's answer once the merge loop ended in `outcome`, one line per way it can end (the
    loop's other end is a MarkError: "overwritten" from `_repair`, `_undo` or `_read_lost`, or any
    other the module docstring lists).  `plain`: what it
    published is exactly what the caller sent (merged with nothing, or a merge that came out the same)."""
    if outcome.kind == "ok" and plain and outcome.repaired is None:
        return PublishResult("ok", version=outcome.version, merged=False)
    if outcome.kind == "ok":
        return PublishResult("ok", version=outcome.version, merged=True, base_version=base_version,
                             their_version=outcome.their_version, repaired=outcome.repaired, body=outcome.text)
    if outcome.kind == "overlap":
        return PublishResult("conflict", your_version=your_version, current_version=outcome.version,
                             mergeable=False, repaired=outcome.repaired, body=outcome.text)
    return PublishResult("conflict", your_version=your_version, current_version=outcome.version,
                         mergeable=False, reason="contention", retries=retries, repaired=outcome.repaired)


def _publish_loop(client: MarkClient, path: str, edit: Callable[[str], Tuple[str, bool]], current: int,
                  sent: Optional[_Sent], budget: _Budget, metadata: Optional[Dict[str, str]]) -> _Outcome:
    """Publish `edit(body of C)` at C, while `budget` lasts; how that ended.  C is `current` at
    first, then after each lost race the version the conflict names, or the newest after a pause
    (`_step_aside`; the one named when no pause fits in the call's time).

    Each round reads version C, and the first of these that holds ends
    the loop or starts the next round:

        C is `sent`, what this call published last        "ok" (version, text, their_version E):
          (`_our_write`), as E + 1 (E: `sent.against`)      it landed after all, as if answered ok
        C is `sent`, later: "stale", stored over           `_repair`'s outcome: it puts L back,
          another writer's version L = C - 1                or raises "overwritten"
        no PUBLISH left in `budget`                        "contention" (version: C)
        edit(C) overlaps                                   "overlap" (version, the text with markers)
        PUBLISH edit(C) at C: ok or created                "ok" (version, text, their_version C)
        PUBLISH edit(C) at C: conflict                     next round, at the version it names; when
                                                           that is not what was just sent, at the
                                                           newest, after a pause (`_step_aside`)

    `their_version` is the version the published text was merged onto
    either way (the first round never finds a landed `sent`: `_merge` asks
    first).  `_repair` runs this loop again (to put L back, on the repair
    budget; after an undo, with `edit` on `budget`).  Each such level
    follows a PUBLISH, so the two budgets bound it.
    """
    while True:
        write = _our_write(client, path, sent, current, budget.until)
        if write == "landed":
            return _Outcome("ok", current, sent.text, sent.against)
        if write == "stale":
            return _repair(client, path, edit, sent, current, budget, metadata)
        if not budget.left:
            return _Outcome("contention", current)
        text, overlap = edit(_read(client, path, current, budget.until))
        if overlap:
            return _Outcome("overlap", current, text)
        response = budget.publish(client, path, text, current, metadata)
        version = _landed(response, f"PUBLISH {path}")
        if version is not None:
            return _Outcome("ok", version, text, current)
        sent, current = _Sent(text, current), response.number("server-version")
        if budget.left and _our_write(client, path, sent, current, budget.until) is None:  # others keep publishing
            current = _step_aside(client, path, current, budget)


def _repair(client: MarkClient, path: str, edit: Callable[[str], Tuple[str, bool]], sent: _Sent, current: int,
            budget: _Budget, metadata: Optional[Dict[str, str]]) -> _Outcome:
    """The merge loop's repair of L = C - 1, which the server dropped when it stored our write `sent` (made
    against E = `sent.against`) as C = `current`; then the loop's answer, with `repaired: L`.

    The module docstring's "Stale writes" says what is put back and when it
    raises; here, how: on `budget.repair`, the merge loop publishes L's own
    change (from E to L) onto C and on; where that overlaps while the
    newest is still C, or E is gone, `_undo`, and the merge loop goes on
    with `edit` on `budget` from the undo.
    """
    lost, repair = current - 1, budget.repair
    base = _read(client, path, sent.against, budget.until, may_be_gone=True)
    if base is not None:
        back = _publish_loop(client, path, _change(base, _read_lost(client, path, lost, budget.until)), current, None,
                             repair, metadata)
        if back.kind == "ok":
            return back._replace(repaired=lost)
        if back.kind == "contention":
            raise _overwritten(path, lost, "the call's time, or the PUBLISHes a repair may spend, ran out")
        if back.version != current:
            raise _overwritten(path, lost, "it meets a version built on ours since")
    undone = _undo(client, path, lost, current, repair, metadata)
    return _publish_loop(client, path, edit, undone, None, budget, metadata)._replace(repaired=lost)


def _change(base: str, changed: str) -> Callable[[str], Tuple[str, bool]]:
    """The edit that makes, in the newest body, the change from `base` to `changed`: their diff3."""
    return lambda newest: diff3(base, changed, newest)


def _our_write(client: MarkClient, path: str, sent: Optional[_Sent], version: int, until: float) -> Optional[str]:
    """Is version `version` the write `sent`, stored after all?  The one place this is decided.

    "landed": it is E + 1 (E: `sent.against`), where a correct server
    stores it.  "stale": it is later, so the server stored it over another
    writer's version L = `version` - 1, whose edits it dropped.  None: not
    ours (no write, a version not after E, another body).  A version
    counts as ours by its body alone.  When it cannot be read (`_read`
    tried again; an empty body is a failed read but for an empty `sent`),
    it may be ours: MarkError with `may_have_landed` True and
    `metadata["unread-version"]` naming it, never an answer.  Only
    `version` is checked: a stale write of ours at a version no conflict
    named is not found (the module docstring's "Stale writes").
    """
    if sent is None or version <= sent.against:
        return None
    try:
        body = _read(client, path, version, until, may_be_empty=not sent.text)
    except MarkError as error:
        raise MarkError(error.status, f"{path}: version {version}, which may be this call's write, could not be "
                                      f"read ({error.message}); fetch it before publishing again",
                        {"unread-version": str(version)}, may_have_landed=True) from error
    if body != sent.text:
        return None
    return "landed" if version == sent.against + 1 else "stale"


def _step_aside(client: MarkClient, path: str, current: int, budget: _Budget) -> int:
    """Wait a random, growing while (RETRY_PAUSE, doubling with each PUBLISH `budget` spent) after a lost
    race, so that writers who lost together do not race again together, and read the newest version's
    number; `current` if the call's time is near its end."""
    pause = random.uniform(0, RETRY_PAUSE * 2 ** (budget.spent - 1))
    if time.monotonic() + pause >= budget.until:
        return current
    time.sleep(pause)
    return _current_version(client, path)


def _undo(client: MarkClient, path: str, lost: int, current: int, repair: _Budget,
          metadata: Optional[Dict[str, str]]) -> int:
    """The undo: publish L = `lost`'s exact body again against C = `current`, the write of ours the
    server stored over it, on the `repair` budget; the version the undo became, C + 1 (answered
    `created` or `ok`, which the client checks names C + 1; or refused in conflict naming C + 1
    while it holds the undo: stored after all).  MarkError("overwritten") naming L when no repair
    PUBLISH or time is left, or the undo is refused for another writer's version; naming that
    version instead when the undo was itself stored over it (L is back, it is not)."""
    if not repair.left:
        raise _overwritten(path, lost, "the call's time, or the PUBLISHes a repair may spend, ran out")
    undo = _Sent(_read_lost(client, path, lost, repair.until), current)
    response = repair.publish(client, path, undo.text, current, metadata)
    version = _landed(response, f"PUBLISH {path}")
    if version is not None:
        return version
    named = response.number("server-version")
    write = _our_write(client, path, undo, named, repair.until)
    if write is None:
        raise _overwritten(path, lost, f"version {named}, someone else's, came before the undo")
    if write == "stale":
        raise _overwritten(path, named - 1, "the undo of ours was itself stored over it")
    return named


def _read_lost(client: MarkClient, path: str, lost: int, until: float) -> str:
    """L's body, to put back: `_read`'s, and when it fails (empty at every read included) L cannot be put
    back, so MarkError("overwritten") naming it (our write did land over it)."""
    try:
        return _read(client, path, lost, until)
    except MarkError as error:
        raise _overwritten(path, lost, f"it could not be read: {error.message}") from error


def _landed(response: MarkResponse, doing: str) -> Optional[int]:
    """The version a write answered `ok` or `created` became; None for `conflict`; else MarkError."""
    if response.status in ("ok", "created"):
        return response.number("version")
    if response.status != "conflict":
        raise MarkError.from_response(response, doing)
    return None


def _overwritten(path: str, lost: int, why: str) -> MarkError:
    return MarkError("overwritten", f"{path}: the server stored a write over version {lost}, which could not be "
                                    f"put back exactly ({why}); publish {path}/v{lost} again by hand, merged "
                                    "with the newest", {"lost-version": str(lost)}, may_have_landed=True)


def _candidate(client: MarkClient, path: str, sent: _Sent, current: int, repaired: Optional[int],
               until: float) -> PublishResult:
    base = _read(client, path, sent.against, until, may_be_gone=True)
    if base is None:
        return _base_unavailable(client, path, sent.against, repaired)
    merged, had_conflict = diff3(base, sent.text, _read(client, path, current, until))
    return PublishResult("merge-candidate", your_version=sent.against, current_version=current,
                         publish_at_version=current, has_markers=had_conflict, repaired=repaired, body=merged)


def _read(client: MarkClient, path: str, version: int, until: float, may_be_gone: bool = False,
          may_be_empty: bool = False) -> Optional[str]:
    """The body of `version`, read by number ("" for version 0): every body this file uses is read here,
    never through the unversioned FETCH (the real server can pair the newest number with an older body).

    A read fails on any status but `ok`, on MarkError from the client (a transport failure), and on
    an empty body: the real server answers `ok` and nothing, its `content-hash` matching, for a
    version it has made but not yet written, so one empty read cannot tell an empty version from
    one being written (and the client keeps no empty body: each read again is sent).  A failed read
    is sent again after a pause (`_wait_to_read_again`), READS reads in all, fewer when the next
    pause would end past `until`; then the last failure raises.  Empty at the last read too:
    MarkError("transport") naming the version, never "", which merged from or published over
    would drop what the version holds; but with `may_be_empty` (`_our_write`, asking whether it is
    a body of ours that is empty), "".  With `may_be_gone` (E: it never was, or the server let it
    go), `not-found` is None.
    """
    if not version:
        return ""
    reads = 0
    while True:
        reads += 1
        try:
            response = client.fetch(path, version=version)
        except MarkError:
            if _wait_to_read_again(reads, until):
                continue
            raise
        if response.status == "ok" and response.body:
            return response.body
        if response.status == "not-found" and may_be_gone:
            return None
        if _wait_to_read_again(reads, until):
            continue
        if response.status != "ok":
            raise MarkError.from_response(response, f"FETCH {path}/v{version}")
        if may_be_empty:
            return ""
        raise MarkError("transport", f"FETCH {path}/v{version} answered ok and empty at each of {reads} "
                                     "reads: the server may still be writing it, so it is not taken as empty")


def _wait_to_read_again(reads: int, until: float) -> bool:
    """After `reads` failed reads of a version: pause READ_PAUSE * 4 ** (reads - 1) seconds and answer
    True; False (no pause) after READS reads, or when the pause would end past the call's time."""
    pause = READ_PAUSE * 4 ** (reads - 1)
    if reads >= READS or time.monotonic() + pause >= until:
        return False
    time.sleep(pause)
    return True


def _base_unavailable(client: MarkClient, path: str, expected_version: int, repaired: Optional[int]) -> PublishResult:
    return PublishResult("conflict", your_version=expected_version, current_version=_current_version(client, path),
                         mergeable=False, reason="base-unavailable", repaired=repaired)


def _current_version(client: MarkClient, path: str) -> int:
    """The newest version's number.  Only the number: the real server can pair it with an
    older version's body (its current link lags its newest file), so bodies are read by number."""
    response = client.request("FETCH", path)
    if response.status != "ok":
        raise MarkError.from_response(response, f"FETCH {path}")
    return response.number("version")


# ---------------------------------------------------------------- helpers

def _check_publish(path, body, expected_version, max_retries, on_conflict="fail") -> None:
    check_path(path)
    check_str("body", body)
    check_int("expected_version", expected_version, minimum=0)
    check_int("max_retries", max_retries, minimum=1)
    if on_conflict not in ("fail", "merge", "candidate"):
        raise ValueError(f'on_conflict must be "fail", "merge" or "candidate", not {on_conflict!r}')


# --------------------------------------------------------------------- CLI

def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m mark_publish`: publish a file or stdin, or one section of the document;
    exit 0: the edit was published (`status: ok`); 1: it was not (a conflict, a candidate), though
    with `repaired: N` an undo of a stale write of it was; 2: an error."""
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
                             "(publish a clean merge), or candidate (print the merge unpublished); in any mode, "
                             "a write of ours the server stored over another's version is put back first, "
                             "which publishes (repaired: N)")
    parser.add_argument("--section", metavar="S",
                        help="replace only section S ('## Results', 'Results' or '#results') with the body, "
                             "its heading line included, on the newest version; with N, a section changed "
                             "since N is merged")
    parser.add_argument("--max-retries", type=int, default=3, metavar="N",
                        help="PUBLISHes after the first, of merges or of a --section write (default 3); putting "
                             "back a version a stale write of ours dropped has PUBLISHes of its own")
    parser.add_argument("--file", help="read the body from FILE instead of stdin")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"deadline of each request, and the call's time from its start, within which "
                             f"it pauses, reads again and puts back a version (default {DEFAULT_TIMEOUT:g})")
    args = parser.parse_args(argv)
    if args.section is None and args.expected_version is None:
        parser.error("--expected-version is required (but for --section)")
    if args.section is not None and args.on_conflict is not None:
        parser.error("--on-conflict is for whole documents: a --section write always goes onto the newest version")
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
                from mark_sections import update_section  # section writes need mark_sections.py beside this file

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
