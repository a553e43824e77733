"""Line-based three-way merge with git-style conflict markers; Python's standard library only.

    >>> from diff3 import diff3
    >>> base = "# Title\\n\\nIntro.\\n\\nBody.\\n"
    >>> ours = "# Title\\n\\nIntro, revised.\\n\\nBody.\\n"
    >>> theirs = "# Title\\n\\nIntro.\\n\\nBody, revised.\\n"
    >>> diff3(base, ours, theirs)
    Merge(merged='# Title\\n\\nIntro, revised.\\n\\nBody, revised.\\n', had_conflict=False)

    $ python -m diff3 OURS BASE THEIRS              # or mark-diff3; exit 0 clean, 1 conflicts, 2 trouble
    $ mark-diff3 OURS BASE THEIRS -o FILE           # as git's merge driver: writes the merge to FILE

The two-way diff (`get_hunks`) is Bram Cohen's patience diff: the lines
both texts share at their start and end are matched (first, as in git's),
then the lines found exactly once in each, in their longest common order,
and each stretch between two of those is diffed the same way; a stretch
with no line once in each, after its equal ends, is one change, as in
bzr's (which of its equal lines became which is not known).  A hunk that only
inserts or only deletes is moved down while the line after it equals its
first, so one change has one place (`_slide`).  The code walks faster
than it reads; test_diff3.py checks it against a plain recursion of this.

The merge takes a change one side made to base, takes the same change made
by both once, and writes changes of the two sides that meet as a conflict
block ("<<<<<<< ours", ours' lines, with style="diff3" "||||||| base" and
base's, "=======", theirs' lines, ">>>>>>> theirs").  The rule:

1. A side's changes are the hunks of `get_hunks(base, side)`; a change's
   reach is its base lines, grown over the base lines beside them, up to
   the side's next changes, that equal a line it removed or added: a diff
   could have put it anywhere there (`_changes`).
2. A change that removes a non-blank line base holds more than once,
   unless each line it removes became one like it (`_in_place`: difflib's
   ratio at least 0.6, as a ticked box), reaches every copy of that line
   between the nearest lines once in base the side keeps: which copy went
   is not known (`_copies`).
3. Changes of the two sides meet when their reaches share a line, when
   one inserts strictly inside the other's reach (or inside the span of
   the group the other is in, step 6), or when both insert at one place,
   an insertion's place being anywhere in its reach (`_meets`).
4. Changes whose reaches touch (one ends where the other starts) also
   meet when either is one of step 2's, or when one that removes lines
   has, at that place, a base line its reach grew over or one it gives
   again: a finer diff could keep that line and insert beside it
   (`_touch_meets`).
5. An insertion at the file's edge also meets a change it touches that
   leaves fewer lines than it took: nothing is left to place it by
   (`_touch_meets`).
6. Changes that meet, and a side's own changes whose reaches touch,
   directly or through others, form a group over the base lines their
   reaches span, which is clean when one side leaves those lines as they
   were or both sides give the same lines, and else a conflict (`_groups`,
   `_taken`).
7. If the clean groups together add a non-blank line (net of what they
   remove) more times than ours' changes do and more times than theirs'
   do, a change was taken twice, and each clean group whose text holds
   such a line becomes a conflict too (`_doubled`).
8. Conflicts with no base line between them are one block, and with
   style="merge" the lines both sides of a block share (by `get_hunks`)
   stay outside its markers, as in git's "zealous" merge; a block whose
   sides are equal (only step 7 makes one) shows base's lines, as
   style="diff3" does (`_block`).

Two results where git's merge differs: edits of neighbouring lines merge,
and a line both sides add at different places is a conflict (step 7):

    >>> diff3("a\\nb\\nc\\n", "a\\nB\\nc\\n", "a\\nb\\nC\\n").merged
    'a\\nB\\nC\\n'
    >>> diff3("# A\\n\\n# B\\n", "# A\\n- x\\n\\n# B\\n", "# A\\n\\n# B\\n- x\\n").had_conflict
    True

Text inserted beside a line the other side removed keeps its place (step
4), but the removal of a line base holds twice meets an edit beside it,
since which copy went is not known (steps 2 and 4):

    >>> diff3("one\\ntwo\\nthree\\n", "one\\nthree\\n", "one\\ntwo\\nnew\\nthree\\n").merged
    'one\\nnew\\nthree\\n'
    >>> diff3("A\\n- x\\nB\\n- x\\nC\\n", "A\\nB\\n- x\\nC\\n", "A\\n- x\\nB2\\n- x\\nC\\n").merged
    'A\\n<<<<<<< ours\\nB\\n=======\\n- x\\nB2\\n>>>>>>> theirs\\n- x\\nC\\n'

At the file's edge, an insertion meets a removal beside it (step 5), not a
line edited in place; in a conflict, lines both sides share stay outside
the markers (step 8), and markers take the document's line ending:

    >>> diff3("a\\nb\\nc\\n", "new\\na\\nb\\nc\\n", "b\\nc\\n").merged
    '<<<<<<< ours\\nnew\\na\\n=======\\n>>>>>>> theirs\\nb\\nc\\n'
    >>> diff3("a\\nb\\nc\\n", "new\\na\\nb\\nc\\n", "A\\nb\\nc\\n").merged
    'new\\nA\\nb\\nc\\n'
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
from itertools import chain, compress, count
from operator import attrgetter, methodcaller, ne
from typing import List, NamedTuple, NoReturn, Optional, Sequence, Tuple

__version__ = "0.2.0"  # the release this file is from; vendored copies keep saying it
__all__ = ["diff3", "Merge", "get_hunks", "split_lines", "join_lines", "main"]


class Merge(NamedTuple):
    merged: str  # the merged text, with conflict blocks where needed
    had_conflict: bool


Hunk = Tuple[int, int, int, int]  # (a_lo, a_hi, b_lo, b_hi): a[a_lo:a_hi] became b[b_lo:b_hi]


def diff3(base: str, ours: str, theirs: str, *, style: str = "merge",
          labels: Sequence[str] = ("ours", "base", "theirs")) -> Merge:
    """Merge the changes from `base` to `ours` and from `base` to `theirs`.

    Returns `Merge(merged, had_conflict)`.  `style="diff3"` also shows the
    base lines inside each conflict block; `labels` are the (ours, base,
    theirs) words written after the markers.  Raises TypeError or
    ValueError, naming the argument, for anything but str texts, a known
    style and three one-line labels.
    """
    _check(base, ours, theirs, style, labels)
    if ours == base or ours == theirs:
        return Merge(theirs, False)
    if theirs == base:
        return Merge(ours, False)

    texts = [split_lines(base), split_lines(ours), split_lines(theirs)]
    # The document's line ending: that of base's first line if it has one, else ours', else theirs'.
    eol = next(("\r\n" if lines[0].endswith("\r\n") else "\n" for lines in texts
                if lines and lines[0].endswith("\n")), "\n")
    markers = ("<<<<<<< " + labels[0] + eol, "||||||| " + labels[1] + eol, "=======" + eol,
               ">>>>>>> " + labels[2] + eol)
    out, had_conflict = _merge(*texts, markers, style == "diff3")
    # Only a document's last line can lack a newline; if none does, plain join.
    ended = all(lines[-1].endswith("\n") for lines in texts if lines)
    return Merge("".join(out) if ended else join_lines(out, eol), had_conflict)


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
    blocks = sorted(_matches(a, b)) + [(len(a), len(b), 0)]
    hunks, i, j = [], 0, 0
    for block_i, block_j, size in blocks:
        if block_i > i or block_j > j:
            hunks.append((i, block_i, j, block_j))
        i, j = block_i + size, block_j + size
    return _slide(a, b, hunks)


def _matches(a: Sequence, b: Sequence) -> List[Tuple[int, int, int]]:
    """The equal runs (i, j, size) of the patience diff, in no particular order."""
    found = []
    stretches = [(0, len(a), 0, len(b))]  # still to diff: a[a_lo:a_hi] against b[b_lo:b_hi]
    while stretches:
        a_lo, a_hi, b_lo, b_hi = stretches.pop()
        head = _same(a, b, a_lo, b_lo, min(a_hi - a_lo, b_hi - b_lo), 1)
        tail = _same(a, b, a_hi, b_hi, min(a_hi - a_lo, b_hi - b_lo) - head, -1)
        found += [(a_lo, b_lo, head), (a_hi - tail, b_hi - tail, tail)]
        a_lo, a_hi, b_lo, b_hi = a_lo + head, a_hi - tail, b_lo + head, b_hi - tail
        if a_lo == a_hi or b_lo == b_hi or a_hi - a_lo == b_hi - b_lo == 1:
            runs = []  # all inserted or all deleted, or one line replaced: no line to pair
        else:
            runs = _anchored_runs(a, b, a_lo, a_hi, b_lo, b_hi)
        for i, j, size in runs:  # each starts after a difference: a stretch to diff before it
            if i > a_lo and j > b_lo:  # (one that only inserts or only deletes holds no match)
                stretches.append((a_lo, i, b_lo, j))
            found.append((i, j, size))
            a_lo, b_lo = i + size, j + size
        if runs and (a_lo < a_hi or b_lo < b_hi):
            stretches.append((a_lo, a_hi, b_lo, b_hi))
    return [block for block in found if block[2]]


def _same(a: Sequence, b: Sequence, i: int, j: int, limit: int, way: int) -> int:
    """How many elements a and b share from a[i], b[j] on (way 1) or before them
    (way -1), at most `limit`: compared a slice of doubling length at a time, at C speed."""
    size, step = 0, 16
    while size < limit:
        stop = min(size + step, limit)
        if way > 0:
            x, y = a[i + size:i + stop], b[j + size:j + stop]
        else:
            x, y = a[i - stop:i - size][::-1], b[j - stop:j - size][::-1]
        if x != y:
            return size + next(compress(count(), map(ne, x, y)))
        size, step = stop, step * 2
    return size


def _anchored_runs(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int,
                   b_hi: int) -> List[Tuple[int, int, int]]:
    """The anchors of a[a_lo:a_hi] against b[b_lo:b_hi] (the chain of `_unique_chain`),
    each with the equal lines after it, as runs (i, j, size); an anchor a run passes
    lies on it (it is the only copy on each side), so it starts no run of its own.

    Where no line moved, the chain is every line once in each, and a walk from each
    run's end to the next such line finds the same runs without looking at the lines
    the runs hold; the walk stops for `_unique_chain` at the first line that moved."""
    count_a, count_b = Counter(a[a_lo:a_hi]), Counter(b[b_lo:b_hi])
    runs: List[Tuple[int, int, int]] = []
    i, j = a_lo, b_lo
    while i < a_hi:
        k = next((k for k in range(i, a_hi) if count_a[a[k]] == 1 and count_b.get(a[k]) == 1), a_hi)
        # Its pair in b is not before j: a line once in b before j is on a run already
        # walked, or in a stretch between runs, checked below when it was passed.
        j_next = b.index(a[k], j, b_hi) if k < a_hi else b_hi
        if any(count_b[line] == 1 and count_a.get(line) == 1 for line in b[j:j_next]):
            # A pair further on in a comes first in b: a line moved.
            return _runs_along(a, b, a_hi, b_hi, _unique_chain(a, b, a_lo, a_hi, b_lo, b_hi))
        if k == a_hi:
            break
        runs.append((k, j_next, _same(a, b, k, j_next, min(a_hi - k, b_hi - j_next), 1)))
        i, j = k + runs[-1][2], j_next + runs[-1][2]
    return runs


def _runs_along(a: Sequence, b: Sequence, a_hi: int, b_hi: int, anchors: List[Tuple[int, int]]) -> List[Tuple[int, int, int]]:
    """The runs that start at `anchors` no earlier run passes."""
    runs: List[Tuple[int, int, int]] = []
    k = 0
    while k < len(anchors):
        i, j = anchors[k]
        runs.append((i, j, _same(a, b, i, j, min(a_hi - i, b_hi - j), 1)))
        k = bisect.bisect_left(anchors, (i + runs[-1][2], -1), k)
    return runs


def _unique_chain(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int) -> List[Tuple[int, int]]:
    """The pairs (i, j) of lines found once in a[a_lo:a_hi] and once in b[b_lo:b_hi],
    the longest chain of them ascending in both (patience sorting), in order; for
    `_anchored_runs`, where some of them do not ascend."""
    # (The pairs are found at C speed: map, compress and zip instead of loops in Python.)
    lines_a, lines_b = a[a_lo:a_hi], b[b_lo:b_hi]
    count_a, count_b = Counter(lines_a), Counter(lines_b)
    once = set(compress(count_a, map((1).__eq__, count_a.values())))
    once.intersection_update(compress(count_b, map((1).__eq__, count_b.values())))
    at_b = dict(zip(lines_b, range(b_lo, b_hi)))  # right for the lines once in b
    in_a = list(map(once.__contains__, lines_a))
    pairs = list(zip(compress(range(a_lo, a_hi), in_a), map(at_b.__getitem__, compress(lines_a, in_a))))
    return _longest_ascending(pairs)


def _longest_ascending(pairs: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """The longest subsequence of `pairs` (ascending in their first number, and
    never empty: a line moved) whose second numbers ascend too, by patience sorting."""
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
    longest, p = [], ends[-1]
    while p >= 0:
        longest.append(pairs[p])
        p = back[p]
    return longest[::-1]


def _slide(a: Sequence, b: Sequence, hunks: List[Hunk]) -> List[Hunk]:
    """Each hunk that only inserts or only deletes, moved down while the line after it
    equals its first (the same text either way), short of touching the next hunk."""
    out: List[Hunk] = []
    for k, (a_lo, a_hi, b_lo, b_hi) in enumerate(hunks):
        if a_lo == a_hi or b_lo == b_hi:
            at = 2 if a_lo == a_hi else 0  # where the changed text's bounds sit in a hunk
            seq, lo, hi = (b, b_lo, b_hi) if at else (a, a_lo, a_hi)
            end = hunks[k + 1][at] - 1 if k + 1 < len(hunks) else len(seq)
            down = 0
            while hi + down < end and seq[hi + down] == seq[lo + down]:
                down += 1
            a_lo, a_hi, b_lo, b_hi = a_lo + down, a_hi + down, b_lo + down, b_hi + down
        out.append((a_lo, a_hi, b_lo, b_hi))
    return out


# ------------------------------------------------------------------- the merge

OURS, THEIRS = 0, 1  # a change's side


class _Change(NamedTuple):  # one side's hunk: base[lo:hi] became `lines`; base[top:bottom] is its reach
    top: int
    bottom: int
    lo: int
    hi: int
    side: int
    lines: List[str]
    copies: bool = False  # rule step 2 grew its reach: which copy of a line it removed is not known


class _Group(NamedTuple):  # changes that meet, over base[lo:hi]: what ours and theirs make of those lines
    lo: int
    hi: int
    mine: List[str]
    yours: List[str]
    taken: Optional[List[str]]  # what it writes if clean; None: a conflict


def _merge(base: List[str], ours: List[str], theirs: List[str], markers: tuple,
           with_base: bool) -> Tuple[List[str], bool]:
    """The merged lines and whether any conflicted."""
    in_base = Counter(base)
    changes = sorted(_changes(base, ours, OURS, in_base) + _changes(base, theirs, THEIRS, in_base))
    groups = []
    for lo, hi, members in _groups(base, changes):
        mine, yours = _apply(base, lo, hi, members, OURS), _apply(base, lo, hi, members, THEIRS)
        groups.append(_Group(lo, hi, mine, yours, _taken(base[lo:hi], mine, yours)))
    doubled = _doubled(base, changes, groups)
    blocks: List[_Group] = []  # what to write: conflicts with no base line between them as one (rule step 8)
    for k, group in enumerate(groups):
        if k in doubled:
            group = group._replace(taken=None)
        if group.taken is None and blocks and blocks[-1].taken is None and blocks[-1].hi == group.lo:
            blocks[-1].mine.extend(group.mine)  # (in place: a run of many conflicts stays linear)
            blocks[-1].yours.extend(group.yours)
            blocks[-1] = blocks[-1]._replace(hi=group.hi)
        else:
            blocks.append(group)
    out: List[str] = []
    pos = 0
    for block in blocks:
        out += base[pos:block.lo]
        if block.taken is None:
            out += _block(base[block.lo:block.hi], block.mine, block.yours, markers, with_base)
        else:
            out += block.taken
        pos = block.hi
    return out + base[pos:], any(block.taken is None for block in blocks)


def _changes(base: List[str], lines: List[str], side: int, in_base: Counter) -> List[_Change]:
    """A side's hunks against base, each with its reach (rule steps 1 and 2)."""
    hunks = get_hunks(base, lines)
    changes = []
    for k, (lo, hi, side_lo, side_hi) in enumerate(hunks):
        own = set(base[lo:hi]).union(lines[side_lo:side_hi])
        floor = hunks[k - 1][1] if k else 0
        ceiling = hunks[k + 1][0] if k + 1 < len(hunks) else len(base)
        top, bottom = lo, hi
        while top > floor and base[top - 1] in own:
            top -= 1
        while bottom < ceiling and base[bottom] in own:
            bottom += 1
        changes.append(_Change(top, bottom, lo, hi, side, lines[side_lo:side_hi]))
    return _copies(base, changes, in_base)


def _copies(base: List[str], changes: List[_Change], in_base: Counter) -> List[_Change]:
    """The side's changes, the reach of each that removes a repeated line grown over
    its copies (rule step 2)."""
    doubtful = {}  # change index: the repeated lines it removes
    for k, c in enumerate(changes):
        lines = {line for line in set(base[c.lo:c.hi]) if in_base[line] > 1 and not line.isspace()}
        if lines and not _in_place(base[c.lo:c.hi], c.lines):
            doubtful[k] = lines
    if not doubtful:
        return changes
    kept = _kept(base, changes, in_base)
    where = _places(base, set().union(*doubtful.values()))
    for k, lines in doubtful.items():
        c = changes[k]
        at = bisect.bisect_left(kept, c.lo)
        room_lo, room_hi = kept[at - 1] if at else -1, kept[at] if at < len(kept) else len(base)
        spots = [i for line in lines for i in where[line] if room_lo < i < room_hi]
        changes[k] = c._replace(top=min(c.top, *spots), bottom=max(c.bottom, max(spots) + 1), copies=True)
    return changes


def _kept(base: List[str], changes: List[_Change], in_base: Counter) -> List[int]:
    """Where the lines once in base are that the side keeps (no change of it touches), ascending."""
    once = list(map((1).__eq__, map(in_base.__getitem__, base)))  # (at C speed)
    for c in changes:
        once[c.lo:c.hi] = [False] * (c.hi - c.lo)
    return list(compress(range(len(base)), once))


def _places(base: List[str], lines: set) -> dict:
    """{line: where base holds it, ascending} for each of `lines`."""
    where: dict = {line: [] for line in lines}
    for i in compress(range(len(base)), map(lines.__contains__, base)):
        where[base[i]].append(i)
    return where


def _in_place(old: List[str], new: List[str]) -> bool:
    """Whether each line became one like it, as a ticked box does: difflib's ratio of the
    two at least 0.6 (get_close_matches' cutoff)."""
    return len(old) == len(new) and all(
        x == y or difflib.SequenceMatcher(None, x, y, autojunk=False).ratio() >= 0.6
        for x, y in set(zip(old, new)))  # (each pair of lines once: a checklist holds few)


def _groups(base: List[str], changes: List[_Change]) -> List[Tuple[int, int, List[_Change]]]:
    """The changes, in order, gathered into groups of those that meet (rule step 6):
    each group as (lo, hi, members), base[lo:hi] the lines its members span.

    One pass in order suffices: a change that sorts between two touching
    changes of the other side meets one of them (one of those grew over its
    place, or starts past its own lines there, or both insert at one place)."""
    groups: List[list] = []
    for c in changes:
        if groups and _meets(base, groups[-1], c):
            groups[-1][1] = max(groups[-1][1], c.bottom)
            groups[-1][2].append(c)
        else:
            groups.append([c.top, c.bottom, [c]])
    return [tuple(group) for group in groups]


def _meets(base: List[str], group: list, c: _Change) -> bool:
    """Whether change `c`, whose reach starts at or after `group`'s, meets one of its
    members (rule steps 3-5)."""
    _, hi, members = group
    if c.top != hi:
        return c.top < hi  # shares a line with the group's span, or inserts strictly inside it
    return any(_touch_meets(base, m, c, hi) for m in members if m.bottom == hi)


def _touch_meets(base: List[str], y: _Change, c: _Change, at: int) -> bool:
    """Whether change `y`, whose reach ends at base line `at`, meets change `c`, whose
    reach starts there (rule steps 4 and 5, and 6's own changes)."""
    if y.side == c.side or (c.lo == c.hi and y.lo == y.hi):
        return True  # step 6: a side's own changes stay in one group; step 3: both insert at one place
    if y.copies or c.copies:
        return True  # step 4: which copy a step-2 change removed is not known
    # Step 4: a change that removes lines, at the place: the base line there came into its
    # reach by step 1, or it gives that line again, so a diff could keep it and insert beside it.
    if y.lo < y.hi and (y.hi != at or base[at - 1] in y.lines):
        return True
    if c.lo < c.hi and (c.lo != at or base[at] in c.lines):
        return True
    # Step 5: an insertion at the file's edge, and a change beside it that leaves fewer lines.
    insertion, change = (c, y) if c.lo == c.hi else (y, c)
    return insertion.lo == insertion.hi and at in (0, len(base)) and len(change.lines) < change.hi - change.lo


def _apply(base: List[str], lo: int, hi: int, members: List[_Change], side: int) -> List[str]:
    """base[lo:hi] with the changes of `side` among `members` applied."""
    out, pos = [], lo
    for c in sorted(members, key=attrgetter("lo")):  # (reaches may come in another order)
        if c.side == side:
            out += base[pos:c.lo]
            out += c.lines
            pos = c.hi
    out += base[pos:hi]
    return out


def _taken(old: List[str], mine: List[str], yours: List[str]) -> Optional[List[str]]:
    """What a group writes if it is clean: the side that changed base's lines `old`, or
    the lines both sides give; None if both changed them differently (rule step 6)."""
    if mine == old or mine == yours:
        return yours
    return mine if yours == old else None


def _doubled(base: List[str], changes: List[_Change], groups: List[_Group]) -> set:
    """The clean groups (by index) whose text holds a non-blank line the clean groups
    together add more times than ours' changes do and than theirs' do (rule step 7)."""
    ours, theirs = (_gain(base, [(c.lo, c.hi, c.lines) for c in changes if c.side == side]) for side in (OURS, THEIRS))
    merged = _gain(base, [(g.lo, g.hi, g.taken) for g in groups if g.taken is not None])
    twice = {line for line, n in merged.items() if n > 0 and n > ours[line] and n > theirs[line] and line.strip()}
    if not twice:
        return set()
    return {k for k, g in enumerate(groups) if g.taken is not None and not twice.isdisjoint(map(_unended, g.taken))}


def _gain(base: List[str], edits: List[Tuple[int, int, List[str]]]) -> Counter:
    """How many more times the edits (lo, hi, lines: base[lo:hi] became lines) hold each line."""
    tally = Counter(map(_unended, chain.from_iterable(lines for _, _, lines in edits)))
    tally.subtract(map(_unended, chain.from_iterable(base[lo:hi] for lo, hi, _ in edits)))
    return tally


_unended = methodcaller("rstrip", "\r\n")  # a line without its ending: a text's last line may lack it


def _block(old: List[str], mine: List[str], yours: List[str], markers: tuple, with_base: bool) -> List[str]:
    """A conflict between ours' lines `mine` and theirs' `yours` over base's `old`; with
    style "merge" the lines both share stay outside the markers (rule step 8)."""
    start, middle, separator, end = markers
    if with_base or mine == yours:  # (equal sides conflict only by rule step 7: base shows why)
        return [start, *mine, middle, *old, separator, *yours, end]
    if not mine or not yours:  # nothing shared (what get_hunks would say, sooner)
        return [start, *mine, separator, *yours, end]
    out, m = [], 0
    for m_lo, m_hi, y_lo, y_hi in get_hunks(mine, yours):
        out += [*mine[m:m_lo], start, *mine[m_lo:m_hi], separator, *yours[y_lo:y_hi], end]
        m = m_hi
    return out + mine[m:]


# ------------------------------------------------------------- command line

def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m diff3 OURS BASE THEIRS [-o FILE]`: the merge to stdout or FILE;
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
    merged, had_conflict = diff3(texts[1], texts[0], texts[2], style="diff3" if args.diff3 else "merge", labels=labels)
    if args.output is None:
        sys.stdout.buffer.write(merged.encode("utf-8"))
        sys.stdout.flush()
    else:
        try:
            with open(args.output, "wb") as file:
                file.write(merged.encode("utf-8"))
        except OSError as error:
            print(f"mark-diff3: {args.output}: {error.strerror or error}", file=sys.stderr)
            return 2
    return 1 if had_conflict else 0


def _bad_argument(message: str) -> NoReturn:
    print(f"mark-diff3: {message} (see --help)", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    sys.exit(main())
