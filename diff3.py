"""Line-based three-way merge with git-style conflict markers; Python's standard library only.

    >>> from diff3 import diff3, explain
    >>> base = "# Title\\n\\nIntro.\\n\\nBody.\\n"
    >>> ours = "# Title\\n\\nIntro, revised.\\n\\nBody.\\n"
    >>> theirs = "# Title\\n\\nIntro.\\n\\nBody, revised.\\n"
    >>> diff3(base, ours, theirs)
    Merge(merged='# Title\\n\\nIntro, revised.\\n\\nBody, revised.\\n', had_conflict=False)
    >>> explain("a\\nb\\nc\\n", "a\\nX\\nc\\n", "a\\nY\\nc\\n")
    [Conflict(start=2, end=6, why='both sides changed base line 2 (rule step 3)')]

    $ python -m diff3 OURS BASE THEIRS              # installed: mark-diff3; exit 0 clean, 1 conflicts, 2 trouble
    $ mark-diff3 OURS BASE THEIRS -o FILE           # as git's merge driver: writes the merge to FILE
    $ mark-diff3 --diff3 -L A -L O -L B OURS BASE THEIRS   # base's lines in conflicts too; labels, not paths
    $ mark-diff3 --explain OURS BASE THEIRS         # also says on stderr why each conflict is one
    $ mark-diff3 --trace OURS BASE THEIRS           # also shows on stderr what each rule step computed

`explain()` gives one entry for each conflict block of rule step 6: the lines
of the merge from its first marker to its last (one block can print as several
marker blocks, shown below) and the steps that made it.  `trace()` returns what
each step computed; it and the command line are at the end of the file, and the
merge does not use them.

The principle: a merge is clean only when it does not depend on a choice
the diff made arbitrarily.  So the merge is made twice, once on the texts
as they are and once on the texts with their lines in reverse order, which
breaks every tie of the diff the other way; where the two readings write
different text, or either conflicts, the merge conflicts there.  Where no
diff broke a tie, the second reading would give the same groups, so it is
not made (`_diff` says why).  DIFF3_CHECK_TIES=1 in the environment makes it
anyway and raises AssertionError if its groups are not the same; the tests
run every bench shape and reproduction with it on.

The rule.  A side's changes are the hunks of `get_hunks(base, side)`.  The
merge takes a change one side made, takes the same change made by both once,
and writes changes of the two sides that meet as a conflict block.

1. A change spans its base lines and those beside it, up to (not into) the
   side's changes before and after, that equal a line it removes or adds:
   the diff could have put it anywhere among them (`_span`).  An insertion
   is "framed" if exactly one of the places it can slide to (up short of
   touching the side's change before; its lines turned as they read there)
   is directly after a blank line of base with its own last line blank: it
   sits there, as a new markdown section does, and its span stays
   (`_framed_place`).
2. A change that removes a non-blank line base holds more than once, unless it
   rewrites its lines in place (`_in_place`: one for one, each line's difflib
   ratio to the one it replaces at least IN_PLACE_RATIO, as a ticked box), also
   spans every copy of such a line between the nearest lines that base holds
   once and the side keeps, and meets any change its span touches: which copy
   went is not known (`_copies`, `_meets`).
3. The changes of both sides, in order of their spans, gather into groups.  A
   change meets a group when its span starts before the group's ends, when
   both insert where their spans touch (unless a framed one's place is away
   from there across blank base lines only), or when one side empties the
   document.  It joins the groups from the first it meets to the last (any
   after the first start where its span starts) into one over the base lines
   their spans cover, clean when one side leaves those lines as they were or
   both make them alike, else a conflict (`_groups`, `_meets`,
   `_clean_text`).  But a group whose changes all rewrite their lines in
   place (step 2's test) and share no base line is a group for each change,
   over its own lines (`_apart`).
4. If the clean groups add a non-blank line (its ending aside; net of the
   lines they remove) more times than ours' changes do and more than theirs'
   do, and a clean group holding it has a change not in place, each clean
   group holding it is a conflict, since both may have added it (`_doubled`).
5. Where a diff broke a tie (or DIFF3_CHECK_TIES=1), steps 1-4 run again on
   the texts reversed; wherever the two readings' groups differ, the base
   lines between the nearest firm lines (both sides keep them in both
   readings, each reading pairs them alike, no group spans them) are clean if
   both readings write them alike without conflict, else one conflict
   (`_readings`, `_doubts`).
6. Conflicts with no base line between them are one block: "<<<<<<< ours",
   ours' lines, (with style="diff3": "||||||| base", base's lines),
   "=======", theirs' lines, ">>>>>>> theirs".  With style="merge" the lines
   both sides share stay outside the markers, as in git's "zealous" merge;
   but a block whose sides are equal (steps 4-6 can make one) shows
   base's lines too, and a block with one side empty shares nothing (`_block`).

`get_hunks` is Bram Cohen's patience diff, plainly: the lines both texts share
at the start and end of a stretch are matched, then the lines found once in
each, in their longest common order, and each stretch between two of those is
diffed the same way.  A stretch with no line in both is one change; one with no
line once in each gets Myers' minimal diff, or is one change where that search
gives up (`_myers`, WORK_LIMIT), so the limit can turn a clean merge into a
conflict, never into another clean merge.  Then a hunk that only inserts or only
deletes moves down while the line after it equals its first, short of touching
the next hunk (`_slide`).

Where one side equals base, or the sides are equal, the rule gives the other
side's text (or theirs), and `diff3` returns it without diffing.  Lines are
split on "\\n" only and keep their endings, so CRLF documents come back
byte-identical where nothing changed; a last line without a newline gets one
when anything follows it.  Markers end as base's first line does if it has an
ending, else as ours' does, else theirs' ("\\n" if none has).  `had_conflict`
comes from the rule, never from a search for markers.  Where the rule and git's
merge differ: edits of neighbouring lines merge, and a line both sides add at
different places conflicts (step 4).  Text inserted beside a line the other
side removed keeps its place:

    >>> diff3("a\\nb\\nc\\n", "a\\nB\\nc\\n", "a\\nb\\nC\\n").merged
    'a\\nB\\nC\\n'
    >>> diff3("one\\ntwo\\nthree\\n", "one\\nthree\\n", "one\\ntwo\\nnew\\nthree\\n").merged
    'one\\nnew\\nthree\\n'
    >>> diff3("x\\r\\ny\\r\\n", "x\\r\\nY1\\r\\n", "x\\r\\nY2\\r\\n").merged
    'x\\r\\n<<<<<<< ours\\r\\nY1\\r\\n=======\\r\\nY2\\r\\n>>>>>>> theirs\\r\\n'

Worked cases, one for each rule step and for each shape a block prints in;
`show` prints the merge's lines after "|", then explain()'s entries:

    >>> from textwrap import fill
    >>> def show(base, ours, theirs):
    ...     for line in diff3(base, ours, theirs).merged.splitlines():
    ...         print(f"| {line}" if line else "|")
    ...     for conflict in explain(base, ours, theirs):
    ...         print(fill(f"lines {conflict.start}-{conflict.end}: {conflict.why}", 88))

Step 1: theirs' new "Note." could sit before or after base's, which ours edits.

    >>> show("Note.\\n", "Note!\\n", "Note.\\nNote.\\n")
    | <<<<<<< ours
    | Note!
    | =======
    | Note.
    | Note.
    | >>>>>>> theirs
    lines 1-6: both sides changed base line 1, where theirs' change could sit anywhere among
    lines like its own (rule steps 1 and 3)

Step 1, framed: theirs' new section ends blank and has one place after a blank
line of base.  Its span (base line 3, blank like its last line) touches ours'
insertion after line 2, but its place is away from there across blank base
lines only, so the two do not meet (step 3).

    >>> show("* a\\n* b\\n\\n## Next\\n", "* a\\n* b\\n* new\\n\\n## Next\\n", "* a\\n* b\\n\\n## Mid\\n\\n## Next\\n")
    | * a
    | * b
    | * new
    |
    | ## Mid
    |
    | ## Next

Step 2: ours removes one "- x" of two, and which one is not known.  Its span
stops at "B", which base holds once and ours keeps, so it covers the removed
copy only; theirs' edit of "B" touches it, and so meets it.

    >>> show("A\\n- x\\nB\\n- x\\nC\\n", "A\\nB\\n- x\\nC\\n", "A\\n- x\\nB2\\n- x\\nC\\n")
    | A
    | <<<<<<< ours
    | B
    | =======
    | - x
    | B2
    | >>>>>>> theirs
    | - x
    | C
    lines 2-7: ours removed "- x", which base holds more than once, and which copy went is
    not known; the other side changed base lines 2-3 near a copy (rule step 2)

Step 3: both sides change the same line, differently.

    >>> show("a\\nb\\nc\\n", "a\\nX\\nc\\n", "a\\nY\\nc\\n")
    | a
    | <<<<<<< ours
    | X
    | =======
    | Y
    | >>>>>>> theirs
    | c
    lines 2-6: both sides changed base line 2 (rule step 3)

Step 3, in place: each side's tick spans all four boxes (step 1), so they
meet; but both rewrite their lines in place and share no base line, so each
is written where it is.

    >>> show("- [ ] t\\n- [ ] t\\n- [ ] t\\n- [ ] t\\n", "- [ ] t\\n- [x] t\\n- [ ] t\\n- [ ] t\\n",
    ...      "- [ ] t\\n- [ ] t\\n- [ ] t\\n- [x] t\\n")
    | - [ ] t
    | - [x] t
    | - [ ] t
    | - [x] t

Step 4: each side adds "- x", at different places: two groups, each clean
alone, would add it twice.

    >>> show("# A\\n- a\\n# B\\n", "# A\\n- a\\n- x\\n# B\\n", "# A\\n- a\\n# B\\n- x\\n")
    | # A
    | - a
    | <<<<<<< ours
    | - x
    | =======
    | >>>>>>> theirs
    | # B
    | <<<<<<< ours
    | =======
    | - x
    | >>>>>>> theirs
    lines 3-6: the merge would hold "- x" more often than ours and than theirs: both may
    have added it (rule step 4)
    lines 8-11: the merge would hold "- x" more often than ours and than theirs: both may
    have added it (rule step 4)

Step 5: ours removes "b"; theirs moves it up, or removes "a" and adds one
after "b".  The first reading merges to "a", "c", losing theirs' move; the
second to "b", "a", "c" (`trace()` shows both).

    >>> show("a\\nb\\nc\\n", "a\\nc\\n", "b\\na\\nc\\n")
    | <<<<<<< ours
    | =======
    | b
    | >>>>>>> theirs
    | a
    | c
    lines 1-4: base lines 1-2 hold look-alike lines the diff can pair two ways, and the two
    ways merge differently (rule step 5)

Step 6: two conflicts with no base line between them print as one block,
with one entry giving both reasons.

    >>> show("a\\n", "x\\na\\nb\\n", "x\\nb\\n")
    | x
    | <<<<<<< ours
    | a
    | =======
    | >>>>>>> theirs
    | b
    lines 2-5: the merge would hold "x" more often than ours and than theirs: both may have
    added it (rule step 4); the merge would hold "b" more often than ours and than theirs:
    both may have added it (rule step 4)

A block whose sides are equal shows base's lines (here none), since only base
shows what is in conflict:

    >>> show("b\\na\\n", "b\\ny\\na\\ny\\n", "y\\na\\ny\\n")
    | <<<<<<< ours
    | b
    | =======
    | >>>>>>> theirs
    | y
    | a
    | <<<<<<< ours
    | y
    | ||||||| base
    | =======
    | y
    | >>>>>>> theirs
    lines 1-4: the merge would hold "y" more often than ours and than theirs: both may have
    added it (rule step 4)
    lines 7-12: the merge would hold "y" more often than ours and than theirs: both may have
    added it (rule step 4)

A block with one side empty shares nothing: the other side's lines stay inside
the markers, even those it kept from base ("a" here).

    >>> show("a\\nb\\n", "a\\nB\\n", "")
    | <<<<<<< ours
    | a
    | B
    | =======
    | >>>>>>> theirs
    lines 1-5: theirs removed every line, and ours changed the document (rule step 3)

A block whose sides share lines prints as several marker blocks, the shared
lines between them; its one entry spans them all:

    >>> show("p\\nq\\nr\\n", "p\\nX\\nY\\nW\\n", "p\\nZ\\nY\\nV\\n")
    | p
    | <<<<<<< ours
    | X
    | =======
    | Z
    | >>>>>>> theirs
    | Y
    | <<<<<<< ours
    | W
    | =======
    | V
    | >>>>>>> theirs
    lines 2-12: both sides changed base lines 2-3 (rule step 3)
"""


import argparse
import bisect
import difflib
import os
import sys
from collections import Counter
from itertools import chain
from operator import methodcaller
from typing import Dict, List, NamedTuple, NoReturn, Optional, Sequence, Set, Tuple, Union

__version__ = "0.3.0"  # the release this file is from; vendored copies keep saying it
__all__ = ["diff3", "explain", "trace", "Merge", "Conflict", "Trace", "TraceReading", "TraceChange", "TraceGroup",
           "TraceDoubt", "get_hunks", "split_lines", "join_lines", "main", "WORK_LIMIT"]

WORK_LIMIT = 50_000  # steps (diagonals tried, equal lines followed) of Myers' search of a stretch: see `_myers`
IN_PLACE_RATIO = 0.6  # difflib's ratio of a line to the one it replaces, at least, for an edit in place (`_in_place`)


class Merge(NamedTuple):
    merged: str  # the merged text, with conflict blocks where needed
    had_conflict: bool


class Conflict(NamedTuple):
    start: int  # the merged text's lines start..end (from 1) run from its first marker to its last
    end: int
    why: str  # what happened, where (base lines, or a line both may have added), and the rule step


class Hunk(NamedTuple):  # a[a_lo:a_hi] became b[b_lo:b_hi]
    a_lo: int
    a_hi: int
    b_lo: int
    b_hi: int


def diff3(base: str, ours: str, theirs: str, *, style: str = "merge",
          labels: Union[Tuple[str, str, str], List[str]] = ("ours", "base", "theirs")) -> Merge:
    """Merge the changes from `base` to `ours` and from `base` to `theirs`.

    Returns `Merge(merged, had_conflict)`.  `style="diff3"` also shows the
    base lines inside each conflict block; `labels`, a tuple or list, are
    the (ours, base, theirs) words written after the markers.  Raises TypeError or
    ValueError, naming the argument, for anything but str texts, a known
    style and three one-line labels.
    """
    return _diff3(base, ours, theirs, style, labels)[0]


def explain(base: str, ours: str, theirs: str, *, style: str = "merge",
            labels: Union[Tuple[str, str, str], List[str]] = ("ours", "base", "theirs")) -> List[Conflict]:
    """Why `diff3(base, ours, theirs, ...)` conflicts where it does: a `Conflict` for each
    conflict block of rule step 6 (conflicts with no base line between them), with the
    lines of the merge from its first marker to its last (several marker blocks, where
    its sides share lines) and the reasons."""
    return _diff3(base, ours, theirs, style, labels)[1]


def _diff3(base: str, ours: str, theirs: str, style: str, labels: Sequence[str],
           notes: Optional[dict] = None) -> Tuple[Merge, List[Conflict]]:
    """The merge and explain()'s conflicts; `notes`, if a dict, gets what each rule step
    computed (`_trace` reads it)."""
    _check(base, ours, theirs, style, labels)
    if ours == base or ours == theirs:
        return Merge(theirs, False), []
    if theirs == base:
        return Merge(ours, False), []
    texts = [split_lines(base), split_lines(ours), split_lines(theirs)]
    # The document's line ending: that of base's first line if it has one, else ours', else theirs'.
    eol = "\n"
    for lines in texts:
        if lines and lines[0].endswith("\n"):
            eol = "\r\n" if lines[0].endswith("\r\n") else "\n"
            break
    markers = ("<<<<<<< " + labels[0] + eol, "||||||| " + labels[1] + eol, "=======" + eol,
               ">>>>>>> " + labels[2] + eol)
    out, conflicts = _merge(*texts, markers, style == "diff3", notes)
    # Only a document's last line can lack a newline; if none does, plain join.
    ended = all(lines[-1].endswith("\n") for lines in texts if lines)
    return Merge("".join(out) if ended else join_lines(out, eol), bool(conflicts)), conflicts


def _check(base: str, ours: str, theirs: str, style: str, labels: Sequence[str]) -> None:
    """Raise TypeError or ValueError, naming the argument, for one diff3 cannot take."""
    for name, value in (("base", base), ("ours", ours), ("theirs", theirs)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be str, not {type(value).__name__}")
    if style not in ("merge", "diff3"):
        raise ValueError(f'style must be "merge" or "diff3", not {style!r}')
    if isinstance(labels, str) or not isinstance(labels, (tuple, list)) or len(labels) != 3 \
            or not all(isinstance(label, str) for label in labels):
        raise TypeError(f"labels must be a tuple or list of three str (ours, base, theirs), not {labels!r}")
    if any("\n" in label or "\r" in label for label in labels):
        raise ValueError(f"labels must not contain line breaks: {labels!r}")


def split_lines(text: str) -> List[str]:
    """Split `text` after each "\\n", keeping the endings; "" has no lines."""
    lines = text.splitlines(keepends=True)  # at C speed, but it splits at "\r" and more
    if len(lines) == text.count("\n") + (not text.endswith("\n") and bool(text)):
        return lines  # no more pieces than "\n"s make: every break was a "\n"
    lines = [line + "\n" for line in text.split("\n")]
    last = lines.pop()[:-1]
    if last:
        lines.append(last)
    return lines


def join_lines(lines: Sequence[str], eol: str) -> str:
    """Concatenate lines, ending a line that has no ending when more follows."""
    if not lines:
        return ""
    head = "".join(line if line.endswith("\n") else line + eol for line in lines[:-1])
    return head + lines[-1]


# ------------------------------------------------------------ the two-way diff

def get_hunks(a: Sequence, b: Sequence) -> List[Hunk]:
    """The places where `b` differs from `a`, by patience diff: (a_lo, a_hi, b_lo, b_hi) each.

    a[a_lo:a_hi] became b[b_lo:b_hi].  Hunks are ascending and separated by
    at least one equal element; one that only inserts or only deletes sits
    as far down as it can without touching the next.
    """
    return _diff(a, b)[0]


def _diff(a: Sequence, b: Sequence) -> Tuple[List[Hunk], bool]:
    """get_hunks(a, b), and whether it broke a tie: the longest order of lines that moved,
    or Myers' pairing of a stretch, is another one read backwards.  If it broke none, the
    texts reversed get the same hunks, except that a hunk which only inserts or only
    deletes may sit higher among lines like its own; rule step 1 spans it over both
    places, so the two readings' groups are the same."""
    hunks: List[Tuple[int, int, int, int]] = []  # (a_lo, a_hi, b_lo, b_hi), made Hunks at the end
    tied = False
    stretches = [(0, len(a), 0, len(b))]  # still to diff: a[a_lo:a_hi] against b[b_lo:b_hi]
    while stretches:
        a_lo, a_hi, b_lo, b_hi = _trimmed(a, b, *stretches.pop())
        if a_lo == a_hi or b_lo == b_hi or set(a[a_lo:a_hi]).isdisjoint(b[b_lo:b_hi]):
            # All inserted, all deleted, or no line in both: one change (or nothing left).
            hunks += [(a_lo, a_hi, b_lo, b_hi)] if a_lo < a_hi or b_lo < b_hi else []
            continue
        anchors, broke = _ascending_both_ways(_unique_pairs(a, b, a_lo, a_hi, b_lo, b_hi))
        if not anchors:
            kept, broke = _myers_both_ways(a[a_lo:a_hi], b[b_lo:b_hi])
            hunks += _between(a, b, [(a_lo - 1, b_lo - 1), *((a_lo + i, b_lo + j) for i, j in kept), (a_hi, b_hi)])
            tied |= broke
            continue
        tied |= broke
        for gap in _between(a, b, [(a_lo - 1, b_lo - 1), *anchors, (a_hi, b_hi)]):
            # One with lines on both sides is a stretch to diff; else it only inserts or deletes.
            (stretches if gap[0] < gap[1] and gap[2] < gap[3] else hunks).append(gap)
    return _slide(a, b, [Hunk(*hunk) for hunk in sorted(hunks)]), tied


def _trimmed(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int) -> Tuple[int, int, int, int]:
    """The stretch a[a_lo:a_hi], b[b_lo:b_hi] without the equal lines it starts and ends with."""
    while a_lo < a_hi and b_lo < b_hi and a[a_lo] == b[b_lo]:
        a_lo, b_lo = a_lo + 1, b_lo + 1
    while a_lo < a_hi and b_lo < b_hi and a[a_hi - 1] == b[b_hi - 1]:
        a_hi, b_hi = a_hi - 1, b_hi - 1
    return a_lo, a_hi, b_lo, b_hi


def _myers_both_ways(a: Sequence, b: Sequence) -> Tuple[List[Tuple[int, int]], bool]:
    """`_myers(a, b)`, and whether Myers pairs a and b reversed otherwise (the texts reversed
    meet this stretch reversed: a tie).  Where the lines both hold come in the same order
    in each, Myers' first round keeps them all (a path of no edit), read either way, so
    neither search is run."""
    shared = set(a).intersection(b)
    xs = [i for i, line in enumerate(a) if line in shared]
    ys = [j for j, line in enumerate(b) if line in shared]
    if [a[i] for i in xs] == [b[j] for j in ys]:
        return list(zip(xs, ys)), False
    kept = _myers(a, b)
    back = _myers(a[::-1], b[::-1])
    return kept, kept != sorted((len(a) - 1 - i, len(b) - 1 - j) for i, j in back)


def _between(a: Sequence, b: Sequence, pairs: List[Tuple[int, int]]) -> List[Tuple[int, int, int, int]]:
    """The gaps (i + 1, x, j + 1, y) between consecutive pairs (i, j), (x, y) of kept lines
    where a[i + 1:x] and b[j + 1:y] differ."""
    return [(i + 1, x, j + 1, y) for (i, j), (x, y) in zip(pairs, pairs[1:])
            if (x > i + 1 or y > j + 1) and a[i + 1:x] != b[j + 1:y]]


def _unique_pairs(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int) -> List[Tuple[int, int]]:
    """The pairs (i, j) of lines found once in a[a_lo:a_hi] and once in b[b_lo:b_hi], by i."""
    a_part, b_part = a[a_lo:a_hi], b[b_lo:b_hi]
    count_a, count_b = Counter(a_part), Counter(b_part)
    once = {line for line, n in count_a.items() if n == 1 and count_b.get(line) == 1}
    at_b = dict(zip(b_part, range(b_lo, b_hi)))  # each line's last place in b (a line once there: its place)
    return [(i, at_b[line]) for i, line in enumerate(a_part, a_lo) if line in once]


def _ascending_both_ways(pairs: List[Tuple[int, int]]) -> Tuple[List[Tuple[int, int]], bool]:
    """`_longest_ascending(pairs)`, and whether another one is found read backwards (the texts
    reversed meet these pairs reversed: a tie).  Where no line moved, all pairs ascend."""
    anchors = _longest_ascending(pairs)
    if len(anchors) == len(pairs):
        return anchors, False
    back = _longest_ascending([(-i, -j) for i, j in reversed(pairs)])
    return anchors, anchors != [(-i, -j) for i, j in reversed(back)]


def _longest_ascending(pairs: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The longest subsequence of `pairs` (ascending in their first number) whose
    second numbers ascend too, by patience sorting; of several, the one whose last pair
    comes last in `pairs`."""
    second = [j for _, j in pairs]
    if second == sorted(second):
        return pairs  # (where no line moved, at C speed)
    # tops[t]: the least j ending a chain of t+1 pairs, ends[t] the pair that ends it;
    # back[p]: the pair before pair p in its chain.
    tops: List[int] = []
    ends: List[int] = []
    back: List[int] = []
    for p, (_, j) in enumerate(pairs):
        t = bisect.bisect_left(tops, j)
        back.append(ends[t - 1] if t else -1)
        if t == len(tops):
            tops.append(j)
            ends.append(p)
        else:
            tops[t], ends[t] = j, p
    longest, p = [], ends[-1] if ends else -1
    while p >= 0:
        longest.append(pairs[p])
        p = back[p]
    return longest[::-1]


def _myers(a: Sequence, b: Sequence) -> List[Tuple[int, int]]:
    """The pairs (i, j) of equal lines a[i], b[j] a minimal diff of a and b keeps, in order,
    by Myers' O(ND) greedy search over the lines both hold (no other line can be kept);
    none (one change) if a round of the search ends over WORK_LIMIT steps."""
    shared = set(a).intersection(b)
    xs = [i for i, line in enumerate(a) if line in shared]  # where those lines are
    ys = [j for j, line in enumerate(b) if line in shared]
    n, m = len(xs), len(ys)
    # furthest[k]: how far along xs (x) the paths of d edits reach on diagonal k = x - y;
    # seen[d]: furthest as it was before round d, to walk the path back.
    furthest: Dict[int, int] = {1: 0}
    seen: List[Dict[int, int]] = []
    work = d = 0
    while True:  # (a path of n + m edits reaches the end, so the loop returns)
        seen.append(dict(furthest))
        work += d + 1  # the diagonals this round tries
        for k in range(-d, d + 1, 2):
            down = _came_down(furthest, k, d)
            x = start = furthest[k + 1] if down else furthest[k - 1] + 1  # a line of b inserted, or of a deleted
            y = x - k
            while x < n and y < m and a[xs[x]] == b[ys[y]]:
                x, y = x + 1, y + 1
            work += x - start  # the equal lines it follows
            furthest[k] = x
            if k == n - m and x >= n:  # the first path to reach the end is a shortest one
                return sorted((xs[x], ys[y]) for x, y in _walk_back(seen, d, n, m))
        if work > WORK_LIMIT:
            return []
        d += 1


def _came_down(furthest: Dict[int, int], k: int, d: int) -> bool:
    """Whether the furthest path of `d` edits on diagonal k comes down from diagonal k + 1 (a
    line of b inserted: x stays) rather than across from k - 1 (a line of a deleted: x + 1)."""
    return k == -d or (k != d and furthest[k - 1] < furthest[k + 1])


def _walk_back(seen: List[Dict[int, int]], d: int, x: int, y: int) -> List[Tuple[int, int]]:
    """The equal lines (x, y) on the path of `d` edits that `_myers` found to (x, y)."""
    pairs = []
    while True:
        k, before = x - y, seen[d]
        down = _came_down(before, k, d)
        prev_x = before[k + 1] if down else before[k - 1]
        start = prev_x if down else prev_x + 1  # where the snake of equal lines to (x, y) starts
        pairs += [(i, i - k) for i in range(start, x)]
        if d == 0:
            return pairs
        x, y, d = prev_x, prev_x - (k + 1 if down else k - 1), d - 1


def _slide(a: Sequence, b: Sequence, hunks: List[Hunk]) -> List[Hunk]:
    """Each hunk that only inserts (or only deletes) moved down while the line after its
    lines of b (of a) equals their first, the text staying the same, short of touching
    the next hunk."""
    out: List[Hunk] = []
    for k, h in enumerate(hunks):
        after = hunks[k + 1] if k + 1 < len(hunks) else Hunk(len(a) + 1, 0, len(b) + 1, 0)
        down = 0
        if h.a_lo == h.a_hi:
            while h.b_hi + down < after.b_lo - 1 and b[h.b_hi + down] == b[h.b_lo + down]:
                down += 1
        elif h.b_lo == h.b_hi:
            while h.a_hi + down < after.a_lo - 1 and a[h.a_hi + down] == a[h.a_lo + down]:
                down += 1
        out.append(Hunk(h.a_lo + down, h.a_hi + down, h.b_lo + down, h.b_hi + down) if down else h)
    return out


# ------------------------------------------------------------------- the merge

OURS, THEIRS = 0, 1  # a change's side
SIDES = ("ours", "theirs")


class _Change(NamedTuple):  # one side's hunk: base[lo:hi] became `lines`; base[span_lo:span_hi] is its span
    span_lo: int
    span_hi: int
    lo: int
    hi: int
    side: int
    lines: List[str]
    copies: Optional[str] = None  # rule step 2: the line base holds more than once that it removes (the first, sorted)
    framed: bool = False  # rule step 1: an insertion set at its one place after a blank line, ending blank


class _Group(NamedTuple):  # what ours and theirs make of base[lo:hi]: changes that meet (step 3), or a doubt (step 5)
    lo: int
    hi: int
    ours: List[str]
    theirs: List[str]
    clean: Optional[List[str]]  # the text it writes if clean; None: a conflict
    why: str = ""  # for a conflict, what made it one


def _merge(base: List[str], ours: List[str], theirs: List[str], markers: tuple, with_base: bool,
           notes: Optional[dict]) -> Tuple[List[str], List[Conflict]]:
    """The merged lines, and the conflicts among them (`notes`: as `_diff3`'s)."""
    groups = _readings(base, ours, theirs, notes)
    blocks: List[_Group] = []  # conflicts with no base line between them as one (rule step 6)
    for group in groups:
        if group.clean is None and blocks and blocks[-1].clean is None and blocks[-1].hi == group.lo:
            why = blocks[-1].why if group.why in blocks[-1].why else blocks[-1].why + "; " + group.why
            blocks[-1] = _Group(blocks[-1].lo, group.hi, blocks[-1].ours + group.ours,
                                blocks[-1].theirs + group.theirs, None, why)
        else:
            blocks.append(group)
    if notes is not None:
        notes["blocks"] = blocks
    out: List[str] = []
    conflicts: List[Conflict] = []
    pos = 0
    for block in blocks:
        out += base[pos:block.lo]
        if block.clean is None:
            lines, first, last = _block(base[block.lo:block.hi], block.ours, block.theirs, markers, with_base)
            conflicts.append(Conflict(len(out) + first + 1, len(out) + last + 1, block.why))
            out += lines
        else:
            out += block.clean
        pos = block.hi
    return out + base[pos:], conflicts


def _readings(base: List[str], ours: List[str], theirs: List[str], notes: Optional[dict]) -> List[_Group]:
    """The groups of the texts as they are, checked against those of the texts reversed
    (rule step 5)."""
    (ours_hunks, ours_tied), (theirs_hunks, theirs_tied) = _diff(base, ours), _diff(base, theirs)
    if notes is not None:
        notes["tied"] = (ours_tied, theirs_tied)
    forward = _reading(base, ours, theirs, [ours_hunks, theirs_hunks], False, notes)
    if not (ours_tied or theirs_tied) and os.environ.get("DIFF3_CHECK_TIES") != "1":
        return forward  # the texts reversed give the same groups (`_diff` says why; DIFF3_CHECK_TIES=1 checks it)
    backward, backward_hunks = _reversed_reading(base, ours, theirs, notes)
    _check_ties((ours_tied, theirs_tied), forward, backward)
    places = [_Places(hunks) for hunks in (ours_hunks, theirs_hunks, *backward_hunks)]
    spans, backward_spans = ([(g.lo, g.hi) for g in groups] for groups in (forward, backward))
    n = len(base)
    out: List[_Group] = []
    done = 0  # forward groups before this one are in `out`
    for lo, hi in _doubts(base, forward, backward, places):
        first, last = _inside(spans, lo, hi)
        out += forward[done:first]
        done = last
        texts = (_text(base, forward[first:last], lo, hi),
                 _text(base, backward[slice(*_inside(backward_spans, lo, hi))], lo, hi))
        if notes is not None:
            notes.setdefault("doubts", []).append((lo, hi, *texts))
        if texts[0] is not None and texts[0] == texts[1]:
            out += forward[first:last]  # the readings differ, but not in what they write
            continue
        # Ours' and theirs' lines between the firm lines (or the text's ends) around base[lo:hi].
        between = [lines[p.at(lo - 1) + 1 if lo else 0:p.at(hi) if hi < n else len(lines)]
                   for lines, p in zip((ours, theirs), places)]
        why = f"{_lines(lo, hi)} hold look-alike lines the diff can pair two ways, and the two ways merge differently"
        out.append(_Group(lo, hi, *between, None, why + " (rule step 5)"))
    return out + forward[done:]


def _reversed_reading(base: List[str], ours: List[str], theirs: List[str],
                      notes: Optional[dict]) -> Tuple[List[_Group], List[List[Hunk]]]:
    """Rule steps 1-4 on the texts with their lines in reverse order: the groups, and the hunks
    of ours and of theirs, turned back (line i of a reversed text of n lines is line n - 1 - i)."""
    n = len(base)
    hunks = [get_hunks(base[::-1], ours[::-1]), get_hunks(base[::-1], theirs[::-1])]
    groups = _reading(base[::-1], ours[::-1], theirs[::-1], hunks, True, notes)
    return ([_Group(n - g.hi, n - g.lo, g.ours[::-1], g.theirs[::-1], None if g.clean is None else g.clean[::-1], g.why)
             for g in reversed(groups)],
            [[Hunk(n - h.a_hi, n - h.a_lo, len(lines) - h.b_hi, len(lines) - h.b_lo) for h in reversed(side_hunks)]
             for lines, side_hunks in zip((ours, theirs), hunks)])


def _doubts(base: List[str], forward: List[_Group], backward: List[_Group],
            places: List["_Places"]) -> List[Tuple[int, int]]:
    """Where the readings' groups differ, widened to the nearest firm lines: base[lo:hi] each.
    A firm line: both sides keep it in both readings (`places`: ours, theirs, then both
    reversed), each reading pairs it with the same line of each side, no group spans it."""
    spanned = {i for g in chain(forward, backward) for i in range(g.lo, g.hi)}

    def firm(i: int) -> bool:
        at = [p.at(i) for p in places]
        return None not in at and at[0] == at[2] and at[1] == at[3] and i not in spanned

    doubts: List[Tuple[int, int]] = []
    for lo, hi, *_ in sorted({_key(g) for g in forward}.symmetric_difference(map(_key, backward))):
        if doubts and doubts[-1][0] <= lo and hi <= doubts[-1][1]:
            continue  # (inside the last one)
        while lo > 0 and not firm(lo - 1):
            lo -= 1
        while hi < len(base) and not firm(hi):
            hi += 1
        doubts.append((lo, hi))
    return doubts


def _key(group: _Group) -> tuple:
    """What a reader sees of a group: its base lines, both sides' lines, whether it is clean."""
    return group.lo, group.hi, tuple(group.ours), tuple(group.theirs), group.clean is None


def _inside(spans: List[Tuple[int, int]], lo: int, hi: int) -> Tuple[int, int]:
    """Where the groups within base[lo:hi] are among groups with these `spans` (in order;
    none crosses lo or hi)."""
    return bisect.bisect_left(spans, (lo, lo)), bisect.bisect_right(spans, (hi, hi))


def _text(base: List[str], groups: List[_Group], lo: int, hi: int) -> Optional[List[str]]:
    """What `groups` (in order, all within base[lo:hi]) make of base[lo:hi]; None if one conflicts."""
    out, pos = [], lo
    for g in groups:
        if g.clean is None:
            return None
        out += base[pos:g.lo]
        out += g.clean
        pos = g.hi
    return out + base[pos:hi]


class _Places:
    """Where a diff's other text holds each line of `a` that its hunks keep."""

    def __init__(self, hunks: List[Hunk]) -> None:
        self.hunks = hunks
        self.starts = [h.a_lo for h in hunks]

    def at(self, i: int) -> Optional[int]:
        """Where line i of `a` is in `b`, or None if a hunk changes it."""
        k = bisect.bisect_right(self.starts, i)
        if k == 0:
            return i
        h = self.hunks[k - 1]
        return None if i < h.a_hi else h.b_hi + i - h.a_hi


def _lines(lo: int, hi: int) -> str:
    """Base lines lo..hi-1, as a reader counts them (from 1)."""
    if lo == hi:
        return f"the place after base line {lo}" if lo else "the start of base"
    return f"base line {lo + 1}" if hi == lo + 1 else f"base lines {lo + 1}-{hi}"


def _reading(base: List[str], ours: List[str], theirs: List[str], hunks: List[List[Hunk]],
             backward: bool, notes: Optional[dict]) -> List[_Group]:
    """One reading's groups (rule steps 1-4), from the hunks of ours and of theirs; `backward`:
    the texts are reversed (a conflict's `why` still counts the lines of the texts as they are)."""
    in_base = Counter(base)
    changes = sorted(_changes(base, ours, OURS, hunks[0], in_base, backward)
                     + _changes(base, theirs, THEIRS, hunks[1], in_base, backward),
                     key=lambda c: (c.span_lo, c.span_hi, c.side))  # by span, ours first
    n = len(base)
    groups, grouped = [], _groups(base, changes)
    for lo, hi, members in grouped:
        ours_lines, theirs_lines = _apply(base, lo, hi, members)
        clean = _clean_text(base[lo:hi], ours_lines, theirs_lines)
        why = "" if clean is not None else _why(base, *((n - hi, n - lo) if backward else (lo, hi)), members)
        groups.append(_Group(lo, hi, ours_lines, theirs_lines, clean, why))
    doubled = _doubled(base, changes, groups, [members for _, _, members in grouped])
    for k, g in enumerate(groups):  # each clean group holding a doubled line is a conflict (step 4)
        lines = sorted(doubled.intersection(map(_unended, g.clean))) if doubled and g.clean is not None else []
        if lines:
            groups[k] = g._replace(clean=None, why=f"the merge would hold \"{lines[0]}\" more often than ours "
                                                   f"and than theirs: both may have added it (rule step 4)")
    if notes is not None:
        notes.setdefault("readings", []).append((base, ours, theirs, hunks, changes, groups))
    return groups


def _changes(base: List[str], lines: List[str], side: int, hunks: List[Hunk], in_base: Counter,
             backward: bool) -> List[_Change]:
    """A side's hunks against base as changes: each with its span, an insertion at its framed
    place if it has one (rule step 1), spans grown over copies (step 2).  `backward`: the
    texts are reversed."""
    changes = []
    for k, (lo, hi, side_lo, side_hi) in enumerate(hunks):
        floor = hunks[k - 1].a_hi if k else 0  # where the side's change before ends, and the next starts
        ceiling = hunks[k + 1].a_lo if k + 1 < len(hunks) else len(base)
        new = lines[side_lo:side_hi]
        change = _Change(*_span(base, lo, hi, new, floor, ceiling), lo, hi, side, new)
        # An insertion slides up short of touching the side's change before.
        place = _framed_place(base, lo, new, floor + 1 if k else 0, backward) if lo == hi else None
        if place is not None:
            change = change._replace(lo=place[0], hi=place[0], lines=place[1], framed=True)
        changes.append(change)
    return _copies(base, changes, in_base)


def _span(base: List[str], lo: int, hi: int, new: List[str], floor: int, ceiling: int) -> Tuple[int, int]:
    """Step 1's span of base[lo:hi] becoming `new`: lo, hi widened over the base lines
    beside them, within base[floor:ceiling], that equal a line it removes or adds."""
    its_lines = set(base[lo:hi]).union(new)
    while lo > floor and base[lo - 1] in its_lines:
        lo -= 1
    while hi < ceiling and base[hi] in its_lines:
        hi += 1
    return lo, hi


def _framed_place(base: List[str], at: int, new: List[str], highest: int,
                  backward: bool) -> Optional[Tuple[int, List[str]]]:
    """Step 1's framed place of the insertion of `new` before base[at]: of the places it
    can slide to (get_hunks slid it down as far as it goes; up, it goes to place `highest`
    at most), its lines turned as they read there, the one directly after a blank line of
    base with its own last line blank (read backwards: before one, its first line blank),
    if exactly one is; as (place, its lines there)."""
    if all(line.strip() for line in new):
        return None  # (its lines at every place are these, turned: none is blank)
    places = [(at, new)]
    while at > highest and base[at - 1] == new[-1]:  # one line up: base's line before joins, its last leaves
        at, new = at - 1, [base[at - 1], *new[:-1]]
        places.append((at, new))
    framed = [(at, new) for at, new in places if (at < len(base) and not base[at].strip() and not new[0].strip()
              if backward else at and not base[at - 1].strip() and not new[-1].strip())]
    return framed[0] if len(framed) == 1 else None


def _copies(base: List[str], changes: List[_Change], in_base: Counter) -> List[_Change]:
    """A side's changes, each that removes a non-blank line base holds more than once,
    unless it rewrites its lines in place, spanning every copy of such a line between the
    nearest lines that base holds once and the side keeps (rule step 2)."""
    doubtful = {}  # change index: the repeated lines it removes
    for k, c in enumerate(changes):
        repeated = {line for line in set(base[c.lo:c.hi]) if in_base[line] > 1 and not line.isspace()}
        if repeated and not _in_place(base[c.lo:c.hi], c.lines):
            doubtful[k] = repeated
    if not doubtful:
        return changes
    # Where the lines are that base holds once and the side keeps (and base's ends).
    once = [in_base[line] == 1 for line in base]
    for c in changes:
        once[c.lo:c.hi] = [False] * (c.hi - c.lo)
    kept = [-1, *(i for i, alone in enumerate(once) if alone), len(base)]
    for k, repeated in doubtful.items():
        c = changes[k]
        at = bisect.bisect_left(kept, c.lo)
        room_lo, room_hi = kept[at - 1], kept[at]
        spots = [i for i in range(room_lo + 1, room_hi) if base[i] in repeated]
        changes[k] = c._replace(span_lo=min(c.span_lo, *spots), span_hi=max(c.span_hi, max(spots) + 1),
                                copies=min(repeated))
    return changes


def _in_place(old: List[str], new: List[str]) -> bool:
    """Whether each line became one like it, as a ticked box does: difflib's ratio of the
    two at least IN_PLACE_RATIO (get_close_matches' cutoff)."""
    return len(old) == len(new) and all(
        x == y or difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() >= IN_PLACE_RATIO
        for x, y in set(zip(old, new)))  # (each pair of lines once: a checklist holds few)


def _groups(base: List[str], changes: List[_Change]) -> List[Tuple[int, int, List[_Change]]]:
    """The changes (sorted by span) gathered into groups of those that meet (rule step 3):
    each group as (lo, hi, members), base[lo:hi] the lines its members span."""
    if any(_empties(base, c) for c in changes):
        return [(0, len(base), changes)]  # one side emptied the document
    groups: List[list] = []  # [lo, hi, members], in order and apart
    for c in changes:
        # It joins every group it meets, and those become one.  Only the last groups can
        # reach its span (several may end where it starts: a change, then insertions).
        k = len(groups)
        while k and groups[k - 1][1] >= c.span_lo:
            k -= 1
        met = [n for n in range(k, len(groups)) if _meets(base, c, *groups[n])]
        if met:
            # The groups from the first it meets to the last become one: any after the first
            # start where its span starts, and one there it does not meet holds insertions only.
            joined = [m for group in groups[met[0]:] for m in group[2]] + [c]
            groups[met[0]:] = [[groups[met[0]][0], max(groups[-1][1], c.span_hi), joined]]
        else:
            groups.append([c.span_lo, c.span_hi, [c]])
    return [part for lo, hi, members in groups for part in _apart(base, lo, hi, members)]


def _apart(base: List[str], lo: int, hi: int, members: List[_Change]) -> List[Tuple[int, int, List[_Change]]]:
    """A group over base[lo:hi] of `members`; but if they all rewrite their lines in place (as
    ticks among equal boxes) and share no base line, a group for each, over its own lines,
    each written where it is (rule step 3)."""
    edits = sorted(members, key=lambda m: m.lo) if len(members) > 1 else []
    if edits and all(m.hi <= n.lo for m, n in zip(edits, edits[1:])) \
            and all(_in_place(base[m.lo:m.hi], m.lines) for m in edits):
        return [(m.lo, m.hi, [m]) for m in edits]
    return [(lo, hi, members)]


def _empties(base: List[str], c: _Change) -> bool:
    """Whether change `c` removes every line of base and writes none (rule step 3)."""
    return c.lo == 0 and c.hi == len(base) and not c.lines


def _meets(base: List[str], c: _Change, lo: int, hi: int, members: List[_Change]) -> bool:
    """Whether change `c`, whose span starts at or after base line `lo` (changes come by
    span), meets the group of `members` over base[lo:hi] (rule steps 2 and 3)."""
    if c.span_lo != hi:
        return c.span_lo < hi  # its span starts before the group's ends: within it
    # Its span touches the group's end: it meets a change of step 2 there, or, if both
    # insert, the insertion there (an insertion's place is anywhere in its span), unless
    # one is framed and its place is away from there across blank lines only.
    ending = [m for m in members if m.span_hi == hi]
    either_copied = c.copies is not None or any(m.copies is not None for m in ending)

    def away(m: _Change) -> bool:
        return m.framed and m.lo != hi and not "".join(base[min(m.lo, hi):max(m.lo, hi)]).strip()

    both_insert = c.lo == c.hi and not away(c) and any(m.lo == m.hi and not away(m) for m in ending)
    return either_copied or both_insert


def _apply(base: List[str], lo: int, hi: int, members: List[_Change]) -> Tuple[List[str], List[str]]:
    """base[lo:hi] with ours' changes among `members` applied, and with theirs'."""
    out: Tuple[List[str], List[str]] = ([], [])
    pos = [lo, lo]  # where each side's text has reached in base
    # in base order (members come by span, and spans grown by step 2 may sort otherwise)
    for c in sorted(members, key=lambda c: c.lo) if len(members) > 1 else members:
        out[c.side].extend(base[pos[c.side]:c.lo])
        out[c.side].extend(c.lines)
        pos[c.side] = c.hi
    for side in (OURS, THEIRS):
        out[side].extend(base[pos[side]:hi])
    return out


def _clean_text(old: List[str], ours: List[str], theirs: List[str]) -> Optional[List[str]]:
    """What a group writes if it is clean: the side that changed base's lines `old`, or
    the lines both sides give; None if both changed them differently (rule step 3)."""
    if ours == old or ours == theirs:
        return theirs
    return ours if theirs == old else None


def _why(base: List[str], lo: int, hi: int, members: List[_Change]) -> str:
    """What made the group of `members` over base lines lo..hi-1 (counted as the texts are) a
    conflict, in words (rule steps 2 and 3)."""
    emptied = [c.side for c in members if _empties(base, c)]
    if emptied:
        return f"{SIDES[emptied[0]]} removed every line, and {SIDES[1 - emptied[0]]} changed the document (rule step 3)"
    with_copies = [c for c in members if c.copies is not None]
    if with_copies:
        line = _unended(with_copies[0].copies)
        return (f"{SIDES[with_copies[0].side]} removed \"{line}\", which base holds more than once, and which copy "
                f"went is not known; the other side changed {_lines(lo, hi)} near a copy (rule step 2)")
    if lo == hi:
        return f"both sides inserted different lines at {_lines(lo, hi)} (rule step 3)"
    grown = [c for c in members if (c.span_lo, c.span_hi) != (c.lo, c.hi)]
    if grown:
        return (f"both sides changed {_lines(lo, hi)}, where {SIDES[grown[0].side]}' change could sit "
                f"anywhere among lines like its own (rule steps 1 and 3)")
    return f"both sides changed {_lines(lo, hi)} (rule step 3)"


def _doubled(base: List[str], changes: List[_Change], groups: List[_Group],
             members: List[List[_Change]]) -> Set[str]:
    """The non-blank lines (without their endings) that the clean groups (`members`: the
    changes of each) together add more times than ours' changes do and than theirs' do,
    and that a clean group with a change not in place holds (rule step 4)."""
    ours, theirs = (_gain(base, [(c.lo, c.hi, c.lines) for c in changes if c.side == side]) for side in (OURS, THEIRS))
    merged = _gain(base, [(g.lo, g.hi, g.clean) for g in groups if g.clean is not None])
    twice = {line for line, n in merged.items() if n > max(ours.get(line, 0), theirs.get(line, 0)) and line.strip()}
    held: Set[str] = set()  # (ticks in place add a line where they are: those alone are not doubled)
    for g, group_changes in zip(groups, members) if twice else ():
        lines = twice.intersection(map(_unended, g.clean or ()))
        if lines and not all(_in_place(base[c.lo:c.hi], c.lines) for c in group_changes):
            held |= lines
    return held


def _gain(base: List[str], edits: List[Tuple[int, int, List[str]]]) -> Dict[str, int]:
    """How many more times the edits (lo, hi, lines: base[lo:hi] became lines) hold each
    line they hold more often (lines they hold as often or less are left out)."""
    added = Counter(map(_unended, chain.from_iterable(lines for _, _, lines in edits)))
    removed = Counter(map(_unended, chain.from_iterable(base[lo:hi] for lo, hi, _ in edits)))
    return {line: n - removed.get(line, 0) for line, n in added.items() if n > removed.get(line, 0)}


_unended = methodcaller("rstrip", "\r\n")  # a line without its ending: a text's last line may lack it


def _block(old: List[str], ours: List[str], theirs: List[str], markers: tuple,
           with_base: bool) -> Tuple[List[str], int, int]:
    """A conflict between ours' and theirs' lines over base's lines `old`, and where its
    first and last marker lines are in it; with style "merge" the lines both share stay
    outside the markers (rule step 6)."""
    start, middle, separator, end = markers
    if with_base or ours == theirs:  # (equal sides can only conflict by steps 4, 5 or 6: base shows why)
        return [start, *ours, middle, *old, separator, *theirs, end], 0, len(ours) + len(old) + len(theirs) + 3
    if not ours or not theirs:  # nothing shared (what get_hunks would say, sooner)
        return [start, *ours, separator, *theirs, end], 0, len(ours) + len(theirs) + 2
    out: List[str] = []
    pos = 0
    hunks = get_hunks(ours, theirs)
    for o_lo, o_hi, t_lo, t_hi in hunks:
        out += [*ours[pos:o_lo], start, *ours[o_lo:o_hi], separator, *theirs[t_lo:t_hi], end]
        pos = o_hi
    return out + ours[pos:], hunks[0].a_lo, len(out) - 1


def _check_ties(tied: Tuple[bool, bool], forward: List[_Group], backward: List[_Group]) -> None:
    """Where no diff broke a tie (`tied`: ours', theirs'), the reversed reading is made only
    with DIFF3_CHECK_TIES=1: raise AssertionError if its groups are not the same as the
    first reading's, as `_diff` says they are."""
    differ = [] if any(tied) else sorted({_key(g) for g in forward}.symmetric_difference(map(_key, backward)))
    if differ:
        raise AssertionError(f"DIFF3_CHECK_TIES: no diff broke a tie, yet the readings' groups differ "
                             f"at {_lines(differ[0][0], differ[0][1])}")


# ------------------------------- trace() and the command line (the merge above does not use them)

# What trace() returns; its docstring says how lines are counted.

class TraceChange(NamedTuple):  # one hunk of a side, as a change (rule steps 1 and 2)
    side: str  # "ours" or "theirs"
    base: Tuple[int, int]  # the base lines its hunk replaces
    span: Tuple[int, int]  # the base lines it spans: beside it, lines like its own (step 1); copies (step 2)
    copies: Optional[str]  # step 2: the line base holds more than once that it removes (the first, sorted); else None
    framed: bool  # step 1: an insertion set at its one place after a blank line (`base` is that place)


class TraceGroup(NamedTuple):  # changes that meet (rule steps 3 and 4), or a block the merge writes
    base: Tuple[int, int]  # the base lines it covers: its changes' spans, or an in-place edit's own lines (step 3)
    ours: List[str]  # what ours makes of those lines
    theirs: List[str]  # what theirs makes of them
    clean: Optional[List[str]]  # the text written there if clean; None: a conflict
    why: str  # for a conflict, what made it one (explain()'s words); else ""


class TraceReading(NamedTuple):  # rule steps 1-4 on the texts as they are, or reversed
    reversed: bool  # the texts' lines in reverse order (all still counted as the texts as they are)
    hunks: Tuple[List[Tuple[Tuple[int, int], Tuple[int, int]]], ...]  # ours', theirs': (base lines, side's lines)
    changes: List[TraceChange]  # both sides', by span, ours first
    groups: List[TraceGroup]


class TraceDoubt(NamedTuple):  # rule step 5: where the readings' groups differ
    base: Tuple[int, int]  # the base lines between the nearest firm lines
    firm: Tuple[Optional[int], Optional[int]]  # those firm lines; None: the start or the end of base
    forward: Optional[List[str]]  # what the groups of the texts as they are write there; None: a conflict
    reversed: Optional[List[str]]  # what those of the texts reversed write there


class Trace(NamedTuple):
    tied: Tuple[bool, bool]  # whether the diff of base to ours, and to theirs, broke a tie
    readings: List[TraceReading]  # the texts as they are; then reversed, if a diff broke a tie or DIFF3_CHECK_TIES=1
    doubts: List[TraceDoubt]  # step 5 (none when the texts are read once: no tie broken, DIFF3_CHECK_TIES not 1)
    blocks: List[TraceGroup]  # what the merge writes, in order, conflicts with no base line between joined (step 6)


def trace(base: str, ours: str, theirs: str, *, style: str = "merge",
          labels: Union[Tuple[str, str, str], List[str]] = ("ours", "base", "theirs")) -> Trace:
    """What `diff3(base, ours, theirs, ...)` computes at each rule step, to check a trace
    made by hand: whether each diff broke a tie; per reading the hunks, the changes and
    their spans, the groups; step 5's doubts between firm lines; the blocks written.
    It is recorded as diff3 runs, not worked out again.  Where one side equals base, or
    the sides are equal, diff3 does not diff, and the trace is empty.  Lines are counted
    from 1 in the texts as they are, the reversed reading's too: (first, last), and
    (k + 1, k) for no line, the place after line k.

    Ours removes "b"; theirs moves it up, or removes "a" and adds one after "b":

    >>> t = trace("a\\nb\\nc\\n", "a\\nc\\n", "b\\na\\nc\\n")
    >>> t.tied  # theirs' diff broke a tie, so the texts are read reversed too (rule step 5)
    (False, True)
    >>> for reading in t.readings:
    ...     print("reversed:" if reading.reversed else "as they are:", reading.hunks)
    ...     print(*reading.changes, *reading.groups, sep="\\n")
    as they are: ([((2, 2), (2, 1))], [((1, 1), (1, 0)), ((3, 2), (2, 2))])
    TraceChange(side='theirs', base=(1, 1), span=(1, 1), copies=None, framed=False)
    TraceChange(side='ours', base=(2, 2), span=(2, 2), copies=None, framed=False)
    TraceChange(side='theirs', base=(3, 2), span=(3, 2), copies=None, framed=False)
    TraceGroup(base=(1, 1), ours=['a\\n'], theirs=[], clean=[], why='')
    TraceGroup(base=(2, 2), ours=[], theirs=['b\\n'], clean=[], why='')
    TraceGroup(base=(3, 2), ours=[], theirs=['a\\n'], clean=['a\\n'], why='')
    reversed: ([((2, 2), (2, 1))], [((1, 0), (1, 1)), ((2, 2), (3, 2))])
    TraceChange(side='theirs', base=(1, 0), span=(1, 0), copies=None, framed=False)
    TraceChange(side='ours', base=(2, 2), span=(2, 2), copies=None, framed=False)
    TraceChange(side='theirs', base=(2, 2), span=(2, 2), copies=None, framed=False)
    TraceGroup(base=(1, 0), ours=[], theirs=['b\\n'], clean=['b\\n'], why='')
    TraceGroup(base=(2, 2), ours=[], theirs=[], clean=[], why='')

    A hunk is (base lines, the side's lines): read as they are, theirs removes base
    line 1 and puts its line 2, "a", after base line 2; read reversed, it puts its line
    1, "b", before base line 1 and removes base line 2.  The readings' groups differ; no
    line is firm above line 3, and there the first reading writes "a" (theirs' move
    lost), the second "b", "a": one conflict.

    >>> t.doubts
    [TraceDoubt(base=(1, 2), firm=(None, 3), forward=['a\\n'], reversed=['b\\n', 'a\\n'])]
    >>> t.blocks  # doctest: +NORMALIZE_WHITESPACE
    [TraceGroup(base=(1, 2), ours=['a\\n'], theirs=['b\\n', 'a\\n'], clean=None, why='base lines 1-2 hold
     look-alike lines the diff can pair two ways, and the two ways merge differently (rule step 5)')]
    """
    return _trace(base, ours, theirs, style, labels)[1]


def _trace(base: str, ours: str, theirs: str, style: str,
           labels: Sequence[str]) -> Tuple[Tuple[Merge, List[Conflict]], Trace]:
    """_diff3(...), and the trace of what it computed (its notes: none where it did not diff)."""
    notes: dict = {}
    result = _diff3(base, ours, theirs, style, labels, notes)
    n = len(notes["readings"][0][0]) if "readings" in notes else 0  # base's lines
    doubts = [TraceDoubt((lo + 1, hi), (lo or None, hi + 1 if hi < n else None), forward, backward)
              for lo, hi, forward, backward in notes.get("doubts", [])]
    return result, Trace(notes.get("tied", (False, False)),
                         [_traced_reading(k == 1, *what) for k, what in enumerate(notes.get("readings", []))],
                         doubts, [_traced_group(g, 0, False) for g in notes.get("blocks", [])])


def _traced_reading(backward: bool, base: List[str], ours: List[str], theirs: List[str],
                    hunks: List[List[Hunk]], changes: List[_Change], groups: List[_Group]) -> TraceReading:
    """A reading as `_reading` noted it, counted as the trace counts (turned back if `backward`)."""
    n = len(base)
    order = reversed if backward else iter
    traced_hunks = tuple([(_from1(h.a_lo, h.a_hi, n, backward), _from1(h.b_lo, h.b_hi, len(lines), backward))
                          for h in order(side_hunks)] for lines, side_hunks in zip((ours, theirs), hunks))
    traced_changes = sorted((TraceChange(SIDES[c.side], _from1(c.lo, c.hi, n, backward),
                                         _from1(c.span_lo, c.span_hi, n, backward), c.copies, c.framed)
                             for c in changes), key=lambda c: (c.span, c.side))
    return TraceReading(backward, traced_hunks, traced_changes,
                        [_traced_group(g, n, backward) for g in order(groups)])


def _traced_group(g: _Group, n: int, backward: bool) -> TraceGroup:
    """A group (of base's `n` lines, reversed if `backward`) as the trace shows it."""
    step = -1 if backward else 1
    return TraceGroup(_from1(g.lo, g.hi, n, backward), g.ours[::step], g.theirs[::step],
                      None if g.clean is None else g.clean[::step], g.why)


def _from1(lo: int, hi: int, n: int, backward: bool) -> Tuple[int, int]:
    """Lines lo..hi-1 of a text of `n` lines (reversed, if `backward`) as (first, last) of the
    text as it is, counted from 1."""
    return (n - hi + 1, n - lo) if backward else (lo + 1, hi)


def _print_trace(t: Trace) -> None:
    """The trace on stderr, in words, as `mark-diff3 --trace` shows it."""
    def say(*words: str) -> None:
        print(*words, sep="", file=sys.stderr)

    def lines(first_last: Tuple[int, int], text: str = "base") -> str:
        return _lines(first_last[0] - 1, first_last[1]).replace("base", text)

    def writes(text: Optional[List[str]], why: str = "") -> str:
        return f"clean, writes {text}" if text is not None else "a conflict" + (": " + why if why else "")

    say("mark-diff3: trace (lines counted from 1; a diff that broke a tie: ours' ", "yes" if t.tied[0] else "no",
        ", theirs' ", "yes" if t.tied[1] else "no", ")")
    for reading in t.readings:
        say("the texts ", "reversed (rule step 5)" if reading.reversed else "as they are", ":")
        for side, hunks in zip(SIDES, reading.hunks):
            lines_of_side = side + "'"
            say(f"  {lines_of_side} hunks: ",
                "; ".join(f"{lines(b)} became {lines(s, lines_of_side)}" for b, s in hunks))
        for c in reading.changes:
            framed = ", framed: set at its one place after a blank line (step 1)" if c.framed else ""
            copies = f", with every copy of {c.copies!r} near it (step 2)" if c.copies else ""
            say(f"  change of {c.side}: {lines(c.base)}, spanning {lines(c.span)}{framed}{copies}")
        for g in reading.groups:
            say(f"  group: {lines(g.base)}: ours {g.ours}, theirs {g.theirs}: {writes(g.clean, g.why)}")
    for d in t.doubts:
        firm = [f"firm line {n}" if n else f"the {end} of base" for n, end in zip(d.firm, ("start", "end"))]
        say(f"doubt: {lines(d.base)}, between {firm[0]} and {firm[1]}: "
            f"as they are {writes(d.forward)}; reversed {writes(d.reversed)}")
    for g in t.blocks:
        say(f"block: {lines(g.base)}: {writes(g.clean, g.why)}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m diff3 OURS BASE THEIRS [--diff3] [-L LABEL]... [-o FILE] [--explain] [--trace]`
    (or --version): the merge to stdout or FILE (--diff3: base's lines in conflicts too;
    -L, up to three times: the labels of ours, base, theirs, else their paths; --explain: a
    line on stderr for each conflict, its merged lines and why; --trace: before those, the
    trace in words); exit 0 clean, 1 conflicts, 2 trouble (one line on stderr)."""
    parser = argparse.ArgumentParser(prog="mark-diff3", description=(
        "Three-way merge of text files with git-style conflict markers. As git's merge driver: "
        'git config merge.mark.driver "mark-diff3 %A %O %B -o %A"'))
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    for name in ("ours", "base", "theirs"):
        parser.add_argument(name)
    parser.add_argument("--diff3", action="store_true", help="also show the base lines in conflicts")
    parser.add_argument("-L", dest="labels", action="append", default=[], metavar="LABEL",
                        help="label for ours, then base, then theirs (default: the file names)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the merge to FILE instead of stdout")
    parser.add_argument("--explain", action="store_true",
                        help="say on stderr, for each conflict, its lines in the merge and why it is one")
    parser.add_argument("--trace", action="store_true",
                        help="show on stderr what each rule step computed, as trace() returns it")
    parser.error = _bad_argument  # one line, not argparse's usage and message
    args = parser.parse_args(argv)
    paths = (args.ours, args.base, args.theirs)
    if len(args.labels) > 3:
        parser.error("-L may be given at most three times")
    labels = tuple(args.labels) + paths[len(args.labels):]
    if any("\n" in label or "\r" in label for label in labels):
        parser.error("a label (by default a file name) must not contain a line break")
    texts = []
    for path in paths:
        texts.append(_read(path))
        if texts[-1] is None:
            return 2
    merging = (texts[1], texts[0], texts[2], "diff3" if args.diff3 else "merge", labels)
    ((merged, had_conflict), conflicts), traced = _trace(*merging) if args.trace else (_diff3(*merging), None)
    if not _write(merged, args.output):
        return 2
    if traced is not None:
        _print_trace(traced)
    for conflict in conflicts if args.explain else ():
        print(f"mark-diff3: lines {conflict.start}-{conflict.end}: {conflict.why}", file=sys.stderr)
    return 1 if had_conflict else 0


def _read(path: str) -> Optional[str]:
    """The UTF-8 text of the file at `path`; None, said in one line on stderr, if it cannot be read."""
    try:
        with open(path, "rb") as file:
            return file.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = f"not UTF-8 (byte {error.start})" if isinstance(error, UnicodeDecodeError) else error.strerror or error
        print(f"mark-diff3: {path}: {why}", file=sys.stderr)
        return None


def _write(text: str, path: Optional[str]) -> bool:
    """Write `text` in UTF-8 to the file at `path`, or to stdout; False, said in one line on
    stderr, if it cannot be written (a closed pipe too: exit 1 would read as "conflicts")."""
    try:
        if path is None:
            sys.stdout.buffer.write(text.encode("utf-8"))
            sys.stdout.flush()
        else:
            with open(path, "wb") as file:
                file.write(text.encode("utf-8"))
    except OSError as error:
        print(f"mark-diff3: {path or 'stdout'}: {error.strerror or error}", file=sys.stderr)
        return False
    return True


def _bad_argument(message: str) -> NoReturn:
    print(f"mark-diff3: {message} (see --help)", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    sys.exit(main())
