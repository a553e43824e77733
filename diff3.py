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
    $ mark-diff3 --explain OURS BASE THEIRS         # also says on stderr why each conflict is one

The principle: a merge is clean only when it does not depend on a choice
the diff made arbitrarily.  So the merge is made twice, once on the texts
as they are and once on the texts with their lines in reverse order, which
breaks every tie of the diff the other way; where the two readings write
different text, or either conflicts, the merge conflicts there.  (Where no
diff broke a tie, the second reading would give the same groups, so it is
not made: `_diff` says whether a diff broke one, and why that suffices.)

The two-way diff (`get_hunks`) is Bram Cohen's patience diff, plainly:
the lines both texts share at the start and end of a stretch are matched,
then the lines found once in each, in their longest common order (patience
sorting), and each stretch between two of those is diffed the same way.  A
stretch with no line in both is one change; one with no line once in each
gets Myers' minimal diff, unless finding it takes more than WORK_LIMIT
steps, and then it is one change (so the limit can turn a clean merge into
a conflict, never into another clean merge).  Then a hunk that only inserts
or only deletes moves down while the line after it equals its first, short
of touching the next hunk (`_slide`).

The merge takes a change one side made to base, takes the same change made
by both once, and writes changes of the two sides that meet as a conflict
block ("<<<<<<< ours", ours' lines, with style="diff3" "||||||| base" and
base's, "=======", theirs' lines, ">>>>>>> theirs").  The rule:

1. A side's changes are the hunks of `get_hunks(base, side)`; each spans
   its base lines and those beside it, up to the side's next change, that
   equal a line it removes or adds: the diff could have put it anywhere
   among them (`_changes`).
2. A change that removes a non-blank line base holds more than once, unless
   it rewrites its lines one for one, each like the one before (`_in_place`:
   difflib's ratio at least 0.6, as a ticked box), also spans every copy of
   that line between the nearest lines once in base that no hunk of the
   side changes, and meets any change its span touches: which copy went is
   not known (`_changes`, `_meets`).
3. A change meets a group (of either side's changes) when its span shares
   a base line with the group's span or inserts inside it, when both insert
   where their spans touch, or when one side empties the document; a change
   that meets groups joins them into one (with any group between them,
   which ends where it starts) over the base lines their spans cover, clean
   when one side leaves those lines as they were or both make them alike,
   else a conflict (`_groups`, `_meets`, `_taken`).
4. If the clean groups add a non-blank line (its ending aside; net of the
   lines they remove) more times than ours' changes do and more than theirs'
   do, each clean group holding it is a conflict, since both may have added
   it (`_doubled`).
5. Steps 1-4 run again on the texts reversed; wherever the two readings'
   groups differ, the base lines between the nearest firm lines (both sides
   keep them in both readings, each reading pairs them alike, no group
   spans them) are clean if both readings write them alike without
   conflict, and else one conflict (`_readings`, `_doubts`).
6. Conflicts that follow each other with no base line between them are one
   block; with style="merge" the lines both sides of a block share stay
   outside its markers, as in git's "zealous" merge, but a block whose sides
   are equal (steps 4-6 can make one) shows base's lines too, as
   style="diff3" does (`_block`).

`explain()` (or `mark-diff3 --explain`) gives, for each conflict, the lines
of the merge it spans and the step that made it.  Where the rule and git's
merge differ: edits of neighbouring lines merge, and a line both sides add
at different places conflicts (step 4):

    >>> diff3("a\\nb\\nc\\n", "a\\nB\\nc\\n", "a\\nb\\nC\\n").merged
    'a\\nB\\nC\\n'
    >>> explain("# A\\n\\n# B\\n", "# A\\n- x\\n\\n# B\\n", "# A\\n\\n# B\\n- x\\n")[0].why
    'the merge would hold "- x" more often than ours and than theirs: both may have added it (rule step 4)'

Text inserted beside a line the other side removed keeps its place; but
removing one of two equal lines meets an edit beside the other (step 2), a
line added to a run of lines like it could sit anywhere in the run (step 1),
and ticks that also read as a box moving are in doubt (step 5):

    >>> diff3("one\\ntwo\\nthree\\n", "one\\nthree\\n", "one\\ntwo\\nnew\\nthree\\n").merged
    'one\\nnew\\nthree\\n'
    >>> diff3("A\\n- x\\nB\\n- x\\nC\\n", "A\\nB\\n- x\\nC\\n", "A\\n- x\\nB2\\n- x\\nC\\n").merged
    'A\\n<<<<<<< ours\\nB\\n=======\\n- x\\nB2\\n>>>>>>> theirs\\n- x\\nC\\n'
    >>> explain("a\\n\\n\\nb\\n", "a\\n\\n\\n\\nb\\n", "a\\n\\nc\\n\\nb\\n")[0].why
    "both sides changed base lines 2-3, where ours' change could sit anywhere among lines like its own (rule steps 1 and 3)"
    >>> explain("- [x] a\\n- [ ] b\\n- [ ] a\\n", "- [ ] a\\n- [ ] b\\n- [x] a\\n", "- [x] a\\n- [ ] b\\nnew\\n- [ ] a\\n")[0].why
    'base lines 1-3 hold look-alike lines the diff can pair two ways, and the two ways merge differently (rule step 5)'

In a conflict, lines both sides share stay outside the markers (step 6),
and markers take the document's line ending:

    >>> diff3("p\\nq\\nr\\n", "p\\nX\\nY\\nr\\n", "p\\nZ\\nY\\nr\\n").merged
    'p\\n<<<<<<< ours\\nX\\n=======\\nZ\\n>>>>>>> theirs\\nY\\nr\\n'
    >>> diff3("x\\r\\ny\\r\\n", "x\\r\\nY1\\r\\n", "x\\r\\nY2\\r\\n").merged
    'x\\r\\n<<<<<<< ours\\r\\nY1\\r\\n=======\\r\\nY2\\r\\n>>>>>>> theirs\\r\\n'

Where one side equals base, or the sides are equal, the rule gives the
other side's text (or theirs), and `diff3` returns it without diffing.
Lines are split on "\\n" only and keep their endings, so CRLF documents come
back byte-identical where nothing changed; a last line without a newline gets
one when anything follows it, and markers use the document's line ending.
`had_conflict` comes from the rule, never from a search for markers.
"""


import argparse
import bisect
import difflib
import sys
from collections import Counter
from itertools import chain
from operator import methodcaller
from typing import Dict, List, NamedTuple, NoReturn, Optional, Sequence, Tuple, Union

__version__ = "0.3.0"  # the release this file is from; vendored copies keep saying it
__all__ = ["diff3", "explain", "Merge", "Conflict", "get_hunks", "split_lines", "join_lines", "main", "WORK_LIMIT"]

WORK_LIMIT = 50_000  # steps (diagonals tried, equal lines followed) Myers' search may take for a stretch, each way


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
    """Why `diff3(base, ours, theirs, ...)` conflicts where it does: a `Conflict` for
    each run of conflict blocks, with the lines of the merge it spans and the reason."""
    return _diff3(base, ours, theirs, style, labels)[1]


def _diff3(base: str, ours: str, theirs: str, style: str,
           labels: Sequence[str]) -> Tuple[Merge, List[Conflict]]:
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
    out, conflicts = _merge(*texts, markers, style == "diff3")
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
        a_lo, a_hi, b_lo, b_hi = stretches.pop()
        while a_lo < a_hi and b_lo < b_hi and a[a_lo] == b[b_lo]:  # equal starts
            a_lo, b_lo = a_lo + 1, b_lo + 1
        while a_lo < a_hi and b_lo < b_hi and a[a_hi - 1] == b[b_hi - 1]:  # equal ends
            a_hi, b_hi = a_hi - 1, b_hi - 1
        if a_lo == a_hi or b_lo == b_hi or set(a[a_lo:a_hi]).isdisjoint(b[b_lo:b_hi]):
            # All inserted, all deleted, or no line in both: one change (or nothing left).
            hunks += [(a_lo, a_hi, b_lo, b_hi)] if a_lo < a_hi or b_lo < b_hi else []
            continue
        pairs = _unique_pairs(a, b, a_lo, a_hi, b_lo, b_hi)
        anchors = _longest_ascending(pairs)
        if not anchors:
            a_part, b_part = a[a_lo:a_hi], b[b_lo:b_hi]
            kept = _myers(a_part, b_part)
            hunks += _between(a, b, [(a_lo - 1, b_lo - 1), *((a_lo + i, b_lo + j) for i, j in kept), (a_hi, b_hi)])
            # The texts reversed meet this stretch reversed: a tie if Myers pairs it otherwise there.
            back = _myers(a_part[::-1], b_part[::-1])
            tied = tied or kept != sorted((len(a_part) - 1 - i, len(b_part) - 1 - j) for i, j in back)
            continue
        if len(anchors) < len(pairs):  # lines moved: does the longest order read the same backwards?
            back = _longest_ascending([(-i, -j) for i, j in reversed(pairs)])
            tied = tied or anchors != [(-i, -j) for i, j in reversed(back)]
        for gap in _between(a, b, [(a_lo - 1, b_lo - 1), *anchors, (a_hi, b_hi)]):
            # One with lines on both sides is a stretch to diff; else it only inserts or deletes.
            (stretches if gap[0] < gap[1] and gap[2] < gap[3] else hunks).append(gap)
    return _slide(a, b, [Hunk(*hunk) for hunk in sorted(hunks)]), tied


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
            down = k == -d or (k != d and furthest[k - 1] < furthest[k + 1])
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


def _walk_back(seen: List[Dict[int, int]], d: int, x: int, y: int) -> List[Tuple[int, int]]:
    """The equal lines (x, y) on the path of `d` edits that `_myers` found to (x, y)."""
    pairs = []
    while True:
        k, before = x - y, seen[d]
        down = k == -d or (k != d and before[k - 1] < before[k + 1])
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


class _Change(NamedTuple):  # one side's hunk: base[lo:hi] became `lines`; base[top:bottom] is its span
    top: int
    bottom: int
    lo: int
    hi: int
    side: int
    lines: List[str]
    copied: Optional[str] = None  # rule step 2: a repeated line it removes (the first, sorted)


class _Group(NamedTuple):  # changes that meet, over base[lo:hi]: what ours and theirs make of those lines
    lo: int
    hi: int
    mine: List[str]
    yours: List[str]
    taken: Optional[List[str]]  # what it writes if clean; None: a conflict
    why: str = ""  # for a conflict, what made it one


def _merge(base: List[str], ours: List[str], theirs: List[str], markers: tuple,
           with_base: bool) -> Tuple[List[str], List[Conflict]]:
    """The merged lines, and the conflicts among them."""
    groups = _readings(base, ours, theirs)
    blocks: List[_Group] = []  # conflicts with no base line between them as one (rule step 6)
    for group in groups:
        if group.taken is None and blocks and blocks[-1].taken is None and blocks[-1].hi == group.lo:
            why = blocks[-1].why if group.why in blocks[-1].why else blocks[-1].why + "; " + group.why
            blocks[-1] = _Group(blocks[-1].lo, group.hi, blocks[-1].mine + group.mine,
                                blocks[-1].yours + group.yours, None, why)
        else:
            blocks.append(group)
    out: List[str] = []
    conflicts: List[Conflict] = []
    pos = 0
    for block in blocks:
        out += base[pos:block.lo]
        if block.taken is None:
            lines, first, last = _block(base[block.lo:block.hi], block.mine, block.yours, markers, with_base)
            conflicts.append(Conflict(len(out) + first + 1, len(out) + last + 1, block.why))
            out += lines
        else:
            out += block.taken
        pos = block.hi
    return out + base[pos:], conflicts


def _readings(base: List[str], ours: List[str], theirs: List[str]) -> List[_Group]:
    """The groups of the texts as they are, checked against those of the texts reversed
    (rule step 5)."""
    (ours_hunks, ours_tied), (theirs_hunks, theirs_tied) = _diff(base, ours), _diff(base, theirs)
    forward = _reading(base, ours, theirs, [ours_hunks, theirs_hunks])
    if not (ours_tied or theirs_tied):
        return forward  # the texts reversed give the same groups (`_diff` says why)
    n = len(base)
    back_hunks = [get_hunks(base[::-1], ours[::-1]), get_hunks(base[::-1], theirs[::-1])]
    # Turned back: line i of a reversed text of length n is line n - 1 - i.
    backward = [_Group(n - g.hi, n - g.lo, g.mine[::-1], g.yours[::-1], None if g.taken is None else g.taken[::-1],
                       g.why) for g in reversed(_reading(base[::-1], ours[::-1], theirs[::-1], back_hunks))]
    sides = (ours, theirs)
    places = [_Places(hunks) for hunks in (ours_hunks, theirs_hunks)] + [
        _Places([Hunk(n - h.a_hi, n - h.a_lo, len(lines) - h.b_hi, len(lines) - h.b_lo) for h in reversed(hunks)])
        for lines, hunks in zip(sides, back_hunks)]
    spans, back_spans = ([(g.lo, g.hi) for g in groups] for groups in (forward, backward))
    out: List[_Group] = []
    done = 0  # forward groups before this one are in `out`
    for lo, hi in _doubts(base, forward, backward, places):
        first, last = _inside(spans, lo, hi)
        out += forward[done:first]
        done = last
        text = _text(base, forward[first:last], lo, hi)
        if text is not None and text == _text(base, backward[slice(*_inside(back_spans, lo, hi))], lo, hi):
            out += forward[first:last]  # the readings differ, but not in what they write
            continue
        # Ours' and theirs' lines between the firm lines (or the text's ends) around base[lo:hi].
        mine, yours = (lines[p.at(lo - 1) + 1 if lo else 0:p.at(hi) if hi < n else len(lines)]
                       for lines, p in zip(sides, places))
        why = f"{_lines(lo, hi)} hold look-alike lines the diff can pair two ways, and the two ways merge differently"
        out.append(_Group(lo, hi, mine, yours, None, why + " (rule step 5)"))
    return out + forward[done:]


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
    return group.lo, group.hi, tuple(group.mine), tuple(group.yours), group.taken is None


def _inside(spans: List[Tuple[int, int]], lo: int, hi: int) -> Tuple[int, int]:
    """Where the groups within base[lo:hi] are among groups with these `spans` (in order;
    none crosses lo or hi)."""
    return bisect.bisect_left(spans, (lo, lo)), bisect.bisect_right(spans, (hi, hi))


def _text(base: List[str], groups: List[_Group], lo: int, hi: int) -> Optional[List[str]]:
    """What `groups` (in order, all within base[lo:hi]) make of base[lo:hi]; None if one conflicts."""
    out, pos = [], lo
    for g in groups:
        if g.taken is None:
            return None
        out += base[pos:g.lo]
        out += g.taken
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


def _reading(base: List[str], ours: List[str], theirs: List[str], hunks: List[List[Hunk]]) -> List[_Group]:
    """One reading's groups (rule steps 1-4), from the hunks of ours and of theirs."""
    in_base = Counter(base)
    changes = sorted(_changes(base, ours, OURS, hunks[0], in_base) + _changes(base, theirs, THEIRS, hunks[1], in_base),
                     key=lambda c: (c.top, c.bottom, c.side))  # by span, ours first
    groups = []
    for lo, hi, members in _groups(base, changes):
        mine, yours = _apply(base, lo, hi, members, OURS), _apply(base, lo, hi, members, THEIRS)
        taken = _taken(base[lo:hi], mine, yours)
        groups.append(_Group(lo, hi, mine, yours, taken, "" if taken is not None else _why(base, lo, hi, members)))
    return _doubled(base, changes, groups)


def _changes(base: List[str], lines: List[str], side: int, hunks: List[Hunk], in_base: Counter) -> List[_Change]:
    """A side's hunks against base as changes, each spanning the base lines beside it that
    equal a line it removes or adds (rule step 1), spans grown by step 2."""
    changes = []
    for k, (lo, hi, side_lo, side_hi) in enumerate(hunks):
        own = set(base[lo:hi]).union(lines[side_lo:side_hi])
        floor = hunks[k - 1].a_hi if k else 0
        ceiling = hunks[k + 1].a_lo if k + 1 < len(hunks) else len(base)
        top, bottom = lo, hi
        while top > floor and base[top - 1] in own:
            top -= 1
        while bottom < ceiling and base[bottom] in own:
            bottom += 1
        changes.append(_Change(top, bottom, lo, hi, side, lines[side_lo:side_hi]))
    doubtful = {}  # change index: the repeated lines it removes
    for k, c in enumerate(changes):
        repeated = {line for line in set(base[c.lo:c.hi]) if in_base[line] > 1 and not line.isspace()}
        if repeated and not _in_place(base[c.lo:c.hi], c.lines):
            doubtful[k] = repeated
    if not doubtful:
        return changes
    # Where the lines once in base are that no hunk of the side changes.
    once = [in_base[line] == 1 for line in base]
    for c in changes:
        once[c.lo:c.hi] = [False] * (c.hi - c.lo)
    kept = [i for i, firm in enumerate(once) if firm]
    for k, repeated in doubtful.items():
        c = changes[k]
        at = bisect.bisect_left(kept, c.lo)
        room_lo, room_hi = kept[at - 1] if at else -1, kept[at] if at < len(kept) else len(base)
        spots = [i for i in range(room_lo + 1, room_hi) if base[i] in repeated]
        changes[k] = c._replace(top=min(c.top, *spots), bottom=max(c.bottom, max(spots) + 1),
                                copied=min(repeated))
    return changes


def _in_place(old: List[str], new: List[str]) -> bool:
    """Whether each line became one like it, as a ticked box does: difflib's ratio of the
    two at least 0.6 (get_close_matches' cutoff)."""
    return len(old) == len(new) and all(
        x == y or difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() >= 0.6
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
        while k and groups[k - 1][1] >= c.top:
            k -= 1
        met = [n for n in range(k, len(groups)) if _meets(c, *groups[n])]
        if met:
            # The groups from the first it meets on (those after it end where it starts) become one.
            joined = [m for group in groups[met[0]:] for m in group[2]] + [c]
            groups[met[0]:] = [[groups[met[0]][0], max(groups[-1][1], c.bottom), joined]]
        else:
            groups.append([c.top, c.bottom, [c]])
    return [tuple(group) for group in groups]


def _empties(base: List[str], c: _Change) -> bool:
    """Whether change `c` removes every line of base and writes none (rule step 3)."""
    return c.lo == 0 and c.hi == len(base) and not c.lines


def _meets(c: _Change, lo: int, hi: int, members: List[_Change]) -> bool:
    """Whether change `c`, whose span starts at or after base line `lo`, meets the group
    of `members` over base[lo:hi] (rule steps 2 and 3)."""
    if c.top != hi:
        return c.top < hi  # its span shares a line with the group's, or it inserts inside it
    # Its span touches the group's end: it meets a change of step 2 there, or, if both
    # insert, the insertion there (an insertion's place is anywhere in its span).
    ending = [m for m in members if m.bottom == hi]
    either_copied = c.copied is not None or any(m.copied is not None for m in ending)
    both_insert = c.lo == c.hi and any(m.lo == m.hi for m in ending)
    return either_copied or both_insert


def _apply(base: List[str], lo: int, hi: int, members: List[_Change], side: int) -> List[str]:
    """base[lo:hi] with the changes of `side` among `members` applied."""
    out, pos = [], lo
    for c in sorted(members, key=lambda c: c.lo):  # (spans grown by step 2 may sort otherwise)
        if c.side == side:
            out += base[pos:c.lo]
            out += c.lines
            pos = c.hi
    out += base[pos:hi]
    return out


def _taken(old: List[str], mine: List[str], yours: List[str]) -> Optional[List[str]]:
    """What a group writes if it is clean: the side that changed base's lines `old`, or
    the lines both sides give; None if both changed them differently (rule step 3)."""
    if mine == old or mine == yours:
        return yours
    return mine if yours == old else None


def _why(base: List[str], lo: int, hi: int, members: List[_Change]) -> str:
    """What made a group of changes a conflict, in words (rule steps 2 and 3)."""
    emptied = [c.side for c in members if _empties(base, c)]
    if emptied:
        return f"{SIDES[emptied[0]]} removed every line, and {SIDES[1 - emptied[0]]} changed the document (rule step 3)"
    copied = [c for c in members if c.copied is not None]
    if copied:
        line = _unended(copied[0].copied)
        return (f"{SIDES[copied[0].side]} removed \"{line}\", which base holds more than once, and which copy "
                f"went is not known; the other side changed {_lines(lo, hi)} near a copy (rule step 2)")
    if lo == hi:
        return f"both sides inserted different lines at {_lines(lo, hi)} (rule step 3)"
    grown = [c for c in members if (c.top, c.bottom) != (c.lo, c.hi)]
    if grown:
        return (f"both sides changed {_lines(lo, hi)}, where {SIDES[grown[0].side]}' change could sit "
                f"anywhere among lines like its own (rule steps 1 and 3)")
    return f"both sides changed {_lines(lo, hi)} (rule step 3)"


def _doubled(base: List[str], changes: List[_Change], groups: List[_Group]) -> List[_Group]:
    """The groups, each clean one whose text holds a non-blank line the clean groups together
    add more times than ours' changes do and than theirs' do made a conflict (rule step 4)."""
    ours, theirs = (_gain(base, [(c.lo, c.hi, c.lines) for c in changes if c.side == side]) for side in (OURS, THEIRS))
    merged = _gain(base, [(g.lo, g.hi, g.taken) for g in groups if g.taken is not None])
    twice = {line for line, n in merged.items() if n > 0 and n > ours[line] and n > theirs[line] and line.strip()}
    if not twice:
        return groups
    out = []
    for g in groups:
        lines = sorted(twice.intersection(map(_unended, g.taken))) if g.taken is not None else []
        if lines:
            g = g._replace(taken=None, why=f"the merge would hold \"{lines[0]}\" more often than ours and "
                                           f"than theirs: both may have added it (rule step 4)")
        out.append(g)
    return out


def _gain(base: List[str], edits: List[Tuple[int, int, List[str]]]) -> Counter:
    """How many more times the edits (lo, hi, lines: base[lo:hi] became lines) hold each line."""
    tally = Counter(map(_unended, chain.from_iterable(lines for _, _, lines in edits)))
    tally.subtract(map(_unended, chain.from_iterable(base[lo:hi] for lo, hi, _ in edits)))
    return tally


_unended = methodcaller("rstrip", "\r\n")  # a line without its ending: a text's last line may lack it


def _block(old: List[str], mine: List[str], yours: List[str], markers: tuple,
           with_base: bool) -> Tuple[List[str], int, int]:
    """A conflict between ours' lines `mine` and theirs' `yours` over base's `old`, and where
    its first and last marker lines are in it; with style "merge" the lines both share stay
    outside the markers (rule step 6)."""
    start, middle, separator, end = markers
    if with_base or mine == yours:  # (equal sides can only conflict by steps 4, 5 or 6: base shows why)
        return [start, *mine, middle, *old, separator, *yours, end], 0, len(mine) + len(old) + len(yours) + 3
    if not mine or not yours:  # nothing shared (what get_hunks would say, sooner)
        return [start, *mine, separator, *yours, end], 0, len(mine) + len(yours) + 2
    out: List[str] = []
    m = 0
    hunks = get_hunks(mine, yours)
    for m_lo, m_hi, y_lo, y_hi in hunks:
        out += [*mine[m:m_lo], start, *mine[m_lo:m_hi], separator, *yours[y_lo:y_hi], end]
        m = m_hi
    return out + mine[m:], hunks[0].a_lo, len(out) - 1


# ------------------------------------------------------------- command line

def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m diff3 OURS BASE THEIRS [-o FILE] [--explain]`: the merge to stdout or
    FILE (with --explain, a line on stderr for each conflict: its merged lines and why);
    exit 0 clean, 1 conflicts, 2 trouble (one line on stderr)."""
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
        try:
            with open(path, "rb") as file:
                texts.append(file.read().decode("utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            why = f"not UTF-8 (byte {error.start})" if isinstance(error, UnicodeDecodeError) else error.strerror or error
            print(f"mark-diff3: {path}: {why}", file=sys.stderr)
            return 2
    (merged, had_conflict), conflicts = _diff3(texts[1], texts[0], texts[2], "diff3" if args.diff3 else "merge", labels)
    try:
        if args.output is None:
            sys.stdout.buffer.write(merged.encode("utf-8"))
            sys.stdout.flush()
        else:
            with open(args.output, "wb") as file:
                file.write(merged.encode("utf-8"))
    except OSError as error:  # (a closed pipe too: exit 1 would read as "conflicts")
        print(f"mark-diff3: {args.output or 'stdout'}: {error.strerror or error}", file=sys.stderr)
        return 2
    for conflict in conflicts if args.explain else ():
        print(f"mark-diff3: lines {conflict.start}-{conflict.end}: {conflict.why}", file=sys.stderr)
    return 1 if had_conflict else 0


def _bad_argument(message: str) -> NoReturn:
    print(f"mark-diff3: {message} (see --help)", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    sys.exit(main())
