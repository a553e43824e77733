"""Line-based three-way merge with git-style conflict markers, built on difflib.

    >>> from diff3 import diff3
    >>> base = "# Title\\n\\nIntro.\\n\\nBody.\\n"
    >>> ours = "# Title\\n\\nIntro, revised.\\n\\nBody.\\n"
    >>> theirs = "# Title\\n\\nIntro.\\n\\nBody, revised.\\n"
    >>> diff3(base, ours, theirs)
    Merge(merged='# Title\\n\\nIntro, revised.\\n\\nBody, revised.\\n', had_conflict=False)

    $ python -m diff3 OURS BASE THEIRS      # or mark-diff3; exit 0 clean, 1 conflicts, 2 trouble

A change one side made to *base* is taken, the same change made by both
appears once, and changes of both sides that meet become a conflict block
("<<<<<<< ours", ours' lines, with style="diff3" "||||||| base" and base's,
"=======", theirs' lines, ">>>>>>> theirs") and set `had_conflict`.  A clean
merge is published with no one looking, so where an edit's place beside the
other side's is in doubt, the two conflict.  The rule, step by step:

1. `get_hunks` diffs base against each side: a line replaced, added or
   removed alone between equal lines is taken as such; elsewhere it anchors
   on lines found once in both, in their longest common order (patience
   diff), and `difflib.SequenceMatcher` pairs the lines both hold between
   anchors, a few at a time where no anchor is near.
2. Each pure insertion or deletion slides up onto the hunk above if it can
   reach it, else as far down as it goes, so the same change by both sides
   sits at one place.
3. A hunk's *zone* is everywhere another diff could put it: its base lines,
   grown over the lines beside them equal to one it removed or added, up
   to the side's nearest hunks that change lines (`_changes`).
4. Unless it edits its lines in place (a ticked box stays that box), a zone
   also grows over each copy of a non-blank line the hunk removed, up to the
   unique lines around it that the side keeps (`_copies`).
5. Hunks of the two sides conflict when one changes a line inside the
   other's zone or inserts strictly inside it, when both insert at one
   point, or when their zones share a line (`_links`); identical hunks
   merge once.
6. Zones that only touch merge cleanly where both base lines at the boundary
   are *firm* (non-blank, once in base and at most once in each side, or the
   file's edge), and an insertion beside a removal has a line beyond it
   (`_meet`).
7. Conflicting hunks make one block over their zones, taking in any hunk
   inside it and any insertion or grown zone that meets it (`_groups`); style
   "merge" leaves out of the block the lines both sides of it share, as git's
   "zealous" merge does.
8. A safety net checks the clean part: hunks of both sides that add a
   non-blank line the merge holds more often than ours and theirs each, where
   their zones touch or both took that line from base, become one block
   (`_doubts`).

Lines are split on "\\n" only and keep their endings, so CRLF documents come
back byte-identical where nothing changed; a last line without a newline gets
one when anything follows it, and markers use the document's line ending.
`had_conflict` comes from the rule, never from a search for markers.
"""


import argparse
import bisect
import difflib
import gc
import heapq
import sys
from collections import Counter, namedtuple
from itertools import accumulate, chain, compress
from operator import add, eq, itemgetter, ne, sub
from typing import Callable, Container, List, NamedTuple, Optional, Sequence, Tuple

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
    for name, value in (("base", base), ("ours", ours), ("theirs", theirs)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be str, not {type(value).__name__}")
    if style not in ("merge", "diff3"):
        raise ValueError(f'style must be "merge" or "diff3", not {style!r}')
    if isinstance(labels, str) or not isinstance(labels, (tuple, list)) or len(labels) != 3 \
            or not all(isinstance(label, str) for label in labels):
        raise TypeError(f"labels must be a tuple of three str (ours, base, theirs), not {labels!r}")
    if any("\n" in label or "\r" in label for label in labels):
        raise ValueError(f"labels must not contain line breaks: {labels!r}")

    texts = [split_lines(base), split_lines(ours), split_lines(theirs)]
    # The document's line ending: that of the first ended line, base first.
    eol = next(("\r\n" if lines[0].endswith("\r\n") else "\n" for lines in texts
                if lines and lines[0].endswith("\n")), "\n")
    markers = ("<<<<<<< " + labels[0] + eol, "||||||| " + labels[1] + eol, "=======" + eol,
               ">>>>>>> " + labels[2] + eol, style == "diff3")
    # The merge makes many small objects, none in a cycle and all kept until it
    # returns: the cyclic collector would only walk them again and again.
    collecting = gc.isenabled()
    gc.disable()
    try:
        out, had_conflict = _merge(*texts, markers)
    finally:
        if collecting:
            gc.enable()
    # Only a document's last line can lack a newline; if none does, plain join.
    ended = all(lines[-1].endswith("\n") for lines in texts if lines)
    return Merge("".join(out) if ended else join_lines(out, eol), had_conflict)


def get_hunks(a: Sequence, b: Sequence) -> List[Hunk]:
    """The places where `b` differs from `a`: (a_lo, a_hi, b_lo, b_hi) each.

    a[a_lo:a_hi] became b[b_lo:b_hi].  Hunks are ascending, separated by at
    least one equal element, and each pure insertion or deletion sits at its
    canonical place (step 2 of the rule).
    """
    n, m = len(a), len(b)
    head = _run(a, b, 0, 0, min(n, m))
    tail = _run(a[::-1], b[::-1], 0, 0, min(n, m) - head)
    blocks = [(0, 0, head)]  # (i, j, size): a[i:i+size] == b[j:j+size]
    _anchored(a, b, head, n - tail, head, m - tail, blocks)
    hunks, i, j = [], 0, 0
    for block_i, block_j, size in blocks + [(n - tail, m - tail, tail)]:
        if block_i > i or block_j > j:
            hunks.append((i, block_i, j, block_j))
        i, j = block_i + size, block_j + size
    return _slide(a, b, hunks)


def split_lines(text: str) -> List[str]:
    """Split `text` after each "\\n", keeping the endings; "" has no lines."""
    lines = text.splitlines(keepends=True)  # at C speed, but it splits at "\r" and more
    if not any(c in text for c in "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029") or \
            len(lines) == text.count("\n") + (not text.endswith("\n") and bool(text)):
        return lines  # every break was a "\n"
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


# ------------------------------------------------------- the merge (steps 3-8)

OURS, THEIRS = 0, 1  # the two sides, as a change's `side`
# One side's hunk: base[lo:hi] became `lines`; base[zone_lo:zone_hi] is its zone.
_Change = namedtuple("_Change", "lo hi side lines zone_lo zone_hi")


def _merge(base: List[str], ours: List[str], theirs: List[str], markers: tuple) -> Tuple[List[str], bool]:
    """The merged lines and whether any conflicted; `markers` frame a block (the
    last says whether blocks show base lines)."""
    count = Counter(base)
    changes = sorted(_changes(base, ours, OURS, count) + _changes(base, theirs, THEIRS, count))
    gains: List[Counter] = []  # each side's _gained, made on first need

    def firm(i: int) -> bool:  # step 6
        if not 0 <= i < len(base):
            return True
        if base[i].isspace() or count[base[i]] != 1:
            return False
        if not gains:
            gains.extend(_gained(base, [c for c in changes if c.side == side]) for side in (OURS, THEIRS))
        key = base[i].rstrip("\n")
        return gains[OURS][key] <= 0 and gains[THEIRS][key] <= 0

    forest, joined = _links(changes, firm, len(base))
    tied: set = set()  # changes the safety net put in one block
    while True:
        groups = _groups(changes, forest, joined, tied)
        out, had_conflict, clean = _write(base, changes, groups, tied, markers)
        doubts = _doubts(base, changes, clean)
        if doubts <= tied:
            return out, had_conflict
        tied |= doubts


def _changes(base: List[str], side: List[str], name: int, count: Counter) -> List[_Change]:
    """A side's hunks against base, each with its zone (steps 3 and 4)."""
    hunks = get_hunks(base, side)
    changes = []
    for k, (lo, hi, side_lo, side_hi) in enumerate(hunks):
        lines, removed = side[side_lo:side_hi], base[lo:hi]
        zone_lo, zone_hi = lo, hi
        # The side's other hunks lie a line away or more: only the file's edges stop a first step.
        if lo and (base[lo - 1] in lines or base[lo - 1] in removed) or \
                hi < len(base) and (base[hi] in lines or base[hi] in removed):
            own = set(lines).union(removed)
            # Up to the side's nearest hunks that change lines (insertions are passed).
            floor = next((hunks[f][1] for f in range(k - 1, -1, -1) if hunks[f][0] < hunks[f][1]), 0)
            ceiling = next((hunks[f][0] for f in range(k + 1, len(hunks)) if hunks[f][0] < hunks[f][1]), len(base))
            while zone_lo > floor and base[zone_lo - 1] in own:
                zone_lo -= 1
            while zone_hi < ceiling and base[zone_hi] in own:
                zone_hi += 1
        changes.append(_Change(lo, hi, name, lines, zone_lo, zone_hi))
    return _copies(base, changes, count)


def _copies(base: List[str], changes: List[_Change], count: Counter) -> List[_Change]:
    """The zones grown over the copies of what a hunk removed (unless it edits in place)
    between the unique base lines the side keeps around it: which copy went is not known."""
    repeated = {line for c in changes for line in base[c.lo:c.hi] if count[line] > 1 and not line.isspace()}
    doubtful = [k for k, c in enumerate(changes)
                if not repeated.isdisjoint(base[c.lo:c.hi]) and not _in_place(base[c.lo:c.hi], c.lines)]
    if not doubtful:
        return changes
    changed = bytearray(len(base))
    for c in changes:
        changed[c.lo:c.hi] = b"\1" * (c.hi - c.lo)
    kept = [i for i, line in enumerate(base) if count[line] == 1 and not changed[i]]
    where: dict = {line: [] for k in doubtful for line in base[changes[k].lo:changes[k].hi] if line in repeated}
    for i, line in enumerate(base):
        if line in where:
            where[line].append(i)
    for k in doubtful:
        c = changes[k]
        at = bisect.bisect_left(kept, c.lo)
        room_lo, room_hi = kept[at - 1] if at else -1, kept[at] if at < len(kept) else len(base)
        for spots in (where[line] for line in base[c.lo:c.hi] if line in where):
            first, last = bisect.bisect_right(spots, room_lo), bisect.bisect_left(spots, room_hi) - 1
            c = c._replace(zone_lo=min(c.zone_lo, spots[first]), zone_hi=max(c.zone_hi, spots[last] + 1))
        changes[k] = c
    return changes


def _in_place(old: List[str], new: List[str]) -> bool:
    """Whether each line became a similar one: difflib pairs 0.6 of the shorter's characters."""
    return len(old) == len(new) and all(
        sum(size for *_, size in difflib.SequenceMatcher(None, x, y).get_matching_blocks()) >= 0.6 * min(len(x), len(y))
        for x, y in zip(old, new))


def _meet(h: _Change, g: _Change, firm: Callable[[int], bool], n: int) -> bool:
    """Whether changes of different sides whose zones meet at one point go together: they
    conflict (step 6), or are the same change (then their group merges cleanly)."""
    if h.lo == h.hi == g.lo == g.hi:
        return True  # both insert at one point
    p = h.zone_hi if h.zone_hi == g.zone_lo else g.zone_hi  # the zones touch at p
    if not (firm(p - 1) and firm(p)):
        return True
    # Text inserted beside a removal is placed by the line beyond it: the file's edge is none.
    return any(x.lo == x.hi and len(y.lines) < y.hi - y.lo and p == (n if y.zone_hi == p else 0)
               for x, y in ((h, g), (g, h)))


def _links(changes: List[_Change], firm: Callable[[int], bool], n: int) -> Tuple[List[int], set]:
    """The changes (by index) of different sides that go together: a union-find forest
    (each change's parent) of the sets they make, and the changes joined to any other.
    One sweep in order of the zones.

    Swept in that order, a change's zone shares a line with (or holds strictly inside)
    every open zone of the other side that ends past its start: those go together for
    certain, so it joins the set of each that reaches past it at once.  Only zones that
    end where it starts are weighed one by one (`_meet`).  So zones that all overlap (a
    long checklist both sides re-ticked) cost n log n, not n squared.
    """
    parent = list(range(len(changes)))
    joined: set = set()

    def widen(reach: dict, key: int, hi: int, member: int) -> None:
        if reach.get(key, (-1,))[0] < hi:
            reach[key] = (hi, member)

    def join(k: int, t: int) -> None:  # t's set joins k's
        r_t, r_k = _root(parent, t), _root(parent, k)
        parent[r_t] = r_k
        for reach in reaches:
            if r_t in reach:
                widen(reach, r_k, *reach.pop(r_t))
        joined.update((k, t))

    ends: Tuple[list, list] = ([], [])  # per side, a heap of (zone_hi, index) of the open zones
    reaches: Tuple[dict, dict] = ({}, {})  # per side, {root of a set: (furthest zone_hi, its change)}
    zones = [(c.zone_lo, c.zone_hi) for c in changes]
    for k in sorted(range(len(changes)), key=zones.__getitem__):
        c = changes[k]
        heap, reach = ends[1 - c.side], reaches[1 - c.side]
        while heap and heap[0][0] < c.zone_lo:
            heapq.heappop(heap)
        if reach:
            for key in [key for key, (hi, _) in reach.items() if hi < c.zone_lo]:
                del reach[key]  # the set's zones have all closed
            for t in [t for hi, t in reach.values() if hi > c.zone_lo]:
                join(k, t)  # a set of its own: the keys are the sets' roots
        touching = []
        while heap and heap[0][0] == c.zone_lo:
            touching.append(heapq.heappop(heap))
        for entry in touching:
            heapq.heappush(heap, entry)
            if _root(parent, entry[1]) != _root(parent, k) and _meet(c, changes[entry[1]], firm, n):
                join(k, entry[1])
        heapq.heappush(ends[c.side], (c.zone_hi, k))
        widen(reaches[c.side], _root(parent, k), c.zone_hi, k)
    return parent, joined


def _root(parent: List[int], k: int) -> int:
    """The root of k's set in a union-find forest, halving the path to it on the way."""
    while parent[k] != k:
        parent[k] = k = parent[parent[k]]
    return k


def _groups(changes: List[_Change], forest: List[int], joined: set, tied: set) -> List[list]:
    """[lo, hi, members, zone_lo, zone_hi]: the changes that go together, in base order
    (step 7): `_links`'s sets, and the `tied` changes as one; a group of several spans
    its zones, everywhere its changes may sit."""
    parent = list(forest)
    ends = sorted(tied)
    for x, y in zip(ends, ends[1:]):
        parent[_root(parent, x)] = _root(parent, y)
    joined = joined | tied
    several: dict = {}
    for k in sorted(joined):
        several.setdefault(_root(parent, k), []).append(k)
    groups = [[c.lo, c.hi, [k], c.zone_lo, c.zone_hi] for k, c in enumerate(changes) if k not in joined]
    for members in several.values():
        zone = [min(changes[k].zone_lo for k in members), max(changes[k].zone_hi for k in members)]
        groups.append([*zone, members, *zone])
    groups.sort(key=itemgetter(0, 1))
    # A change inside another group's span joins it, and so does one that meets a
    # group of several where its own place is open: an insertion, or a grown zone.
    merged = groups[:1]
    for group in groups[1:]:
        last = merged[-1]
        single_after, single_before = len(group[2]) == 1 < len(last[2]), len(last[2]) == 1 < len(group[2])
        if group[0] < last[1] \
                or single_after and group[3] <= last[1] and (group[3] < group[0] or group[0] == group[1]) \
                or single_before and last[4] >= group[0] and (last[4] > last[1] or last[0] == last[1]):
            last[1], last[4] = max(last[1], group[1]), max(last[4], group[4])
            last[2] += group[2]
        else:
            merged.append(group)
    for group in merged:
        group[2].sort()
    return merged


def _write(base: List[str], changes: List[_Change], groups: List[list], tied: set,
           markers: tuple) -> Tuple[List[str], bool, List[_Change]]:
    """The merged lines, whether a block conflicts, and the changes merged cleanly."""
    start, middle, separator, end, with_base = markers
    out: List[str] = []
    clean: List[_Change] = []
    pos, had_conflict = 0, False
    for lo, hi, members, *_ in groups:
        out += base[pos:lo]
        pos = hi
        if len(members) == 1:
            clean.append(changes[members[0]])
            out += clean[-1].lines
            continue
        group = [changes[k] for k in members]
        mine, yours = (_apply(base, lo, hi, [c for c in group if c.side == side]) for side in (OURS, THEIRS))
        whole = not tied.isdisjoint(members)
        if not whole and mine == yours:  # the same change made twice
            out += mine
            clean += [c for c in group if c.side == OURS]
            continue
        had_conflict = True
        if with_base or mine == yours:
            out += [start, *mine, middle, *base[lo:hi], separator, *yours, end]
        elif whole or set(mine).isdisjoint(yours):
            out += [start, *mine, separator, *yours, end]
        else:  # lines both sides share stay out of the block, which splits where they are
            m = 0
            for m_lo, m_hi, y_lo, y_hi in get_hunks(mine, yours):
                out += [*mine[m:m_lo], start, *mine[m_lo:m_hi], separator, *yours[y_lo:y_hi], end]
                m = m_hi
            out += mine[m:]
    return out + base[pos:], had_conflict, clean


def _apply(base: List[str], lo: int, hi: int, changes: List[_Change]) -> List[str]:
    """base[lo:hi] with one side's changes in it applied."""
    out, pos = [], lo
    for c in changes:
        out += base[pos:c.lo] + c.lines
        pos = c.hi
    return out + base[pos:hi]


def _doubts(base: List[str], changes: List[_Change], clean: List[_Change]) -> set:
    """The safety net (step 8): changes of both sides that add a non-blank line the clean
    part of the merge holds more often than ours and theirs each (then one edit was read
    at two places), where their zones touch or both sides took that line from base."""
    sides = [[c for c in changes if c.side == side] for side in (OURS, THEIRS)]
    added = [set(chain.from_iterable(c.lines for c in side)) for side in sides]
    for lines, side in zip(added, sides):  # only a text's last line can lack its newline
        lines.update(line + "\n" for c in side[-1:] for line in c.lines[-1:] if not line.endswith("\n"))
    if all(line.isspace() or not line.endswith("\n") for line in added[0] & added[1]):
        return set()
    ours, theirs, merged = (_gained(base, some) for some in (*sides, clean))
    twice = {line for line, n in merged.items() if n > max(ours[line], theirs[line]) and line.strip()}
    taken = [{line.rstrip("\n") for c in side for line in base[c.lo:c.hi]} for side in sides]
    moved = twice & taken[0] & taken[1]  # a line both sides moved, each to its own place
    adds = [{line.rstrip("\n") for line in c.lines} & twice for c in changes]
    adding = [[k for k, c in enumerate(changes) if c.side == side and adds[k]] for side in (OURS, THEIRS)]
    # A change is in doubt when a change of the other side's `adding` has a zone that
    # meets its own (found among those starting by its end, by the furthest end of
    # their zones), or adds a line it adds that both moved: no pair is tried one by one.
    doubts = set()
    for mine, yours in (adding, adding[::-1]):
        yours = sorted(yours, key=lambda k: changes[k].zone_lo)
        starts = [changes[k].zone_lo for k in yours]
        reach = list(accumulate((changes[k].zone_hi for k in yours), max))
        moved_there = set().union(*(adds[k] & moved for k in yours))
        for x in mine:
            at = bisect.bisect_right(starts, changes[x].zone_hi)
            if at and reach[at - 1] >= changes[x].zone_lo or not moved_there.isdisjoint(adds[x]):
                doubts.add(x)
    return doubts


def _gained(base: List[str], changes: List[_Change]) -> Counter:
    """How many more times than base the changes hold each line, its newline aside
    (a text's last line may lack one)."""
    tally = Counter(line.rstrip("\n") for c in changes for line in c.lines)
    tally.subtract(line.rstrip("\n") for c in changes for line in base[c.lo:c.hi])
    return tally


# ------------------------------------------------------- the two-way diff (steps 1-2)

_SMALL_GAP = 4096  # lines of one side times the other's, after setting aside, up to which a gap is diffed whole
_WINDOW = 8  # lines of each side the first window on a huge gap takes
_PROBE = 2  # equal lines after a line replaced, added or removed that make it so without anchors


def _run(a: Sequence, b: Sequence, i: int, j: int, limit: int) -> int:
    """How many elements a[i:] and b[j:] share at their start, at most `limit`;
    measured in slices of doubling length, so at C speed."""
    size, step = 0, 4
    while step and size < limit:
        stop = size + step if size + step < limit else limit
        if a[i + size:i + stop] == b[j + size:j + stop]:
            size, step = stop, step * 2
        else:
            step //= 2
    return size


def _anchored(a: Sequence, b: Sequence, i: int, i_end: int, j: int, j_end: int, blocks: list) -> None:
    """Add the blocks of a[i:i_end] against b[j:j_end]: equal runs and lone changes
    as they come, and where neither is found, a walk from anchor to anchor.

    An *anchor* is a line found once in each; the walk follows the longest chain
    of anchors in the same order on both sides (patience diff).
    """
    chain_left: Optional[list] = None  # the chain still ahead, last anchor first; made on first need
    while i < i_end and j < j_end:
        size = _run(a, b, i, j, min(i_end - i, j_end - j))
        if size:
            blocks.append((i, j, size))
            i, j = i + size, j + size
            continue
        lone = _lone(a, b, i, i_end, j, j_end)
        if lone:
            i, j = i + lone[0], j + lone[1]
            continue
        if chain_left is None:
            count_a, count_b = Counter(a[i:i_end]), Counter(b[j:j_end])
            # Where the lines both hold come in the same order (each edit a
            # replacement by new lines), that is the one longest common
            # subsequence: a rewrite needs no anchors.  (Without a line once in
            # each there are none, and _gap tries this itself.)
            found = _paired(a, b, i, i_end, j, j_end, 0, count_a, count_b) \
                if 1 in count_a.values() and 1 in count_b.values() else None
            if found is not None:
                blocks += found
                return
            anchors = {line for line, n in count_a.items() if n == 1 and count_b.get(line) == 1}
            if not anchors:  # the rest is one gap
                _gap(a, b, i, i_end, j, j_end, blocks, count_a, count_b)
                return
            chain_left = _patience(a, b, i, i_end, j, j_end, anchors)
        while chain_left and (chain_left[-1][0] < i or chain_left[-1][1] < j):
            chain_left.pop()
        anchor = chain_left[-1] if chain_left else (i_end, j_end)
        _gap(a, b, i, anchor[0], j, anchor[1], blocks)
        i, j = anchor


def _lone(a: Sequence, b: Sequence, i: int, i_end: int, j: int, j_end: int) -> Optional[Tuple[int, int]]:
    """(1, 1), (0, 1) or (1, 0) where a line replaced, added or removed at (i, j) is
    followed by _PROBE equal lines (or by both ends), and neither line is near on the
    other side: a change that needs no anchor."""
    if a[i] not in b[j:j + _PROBE + 1] and b[j] not in a[i:i + _PROBE + 1]:
        for skip_a, skip_b in ((1, 1), (0, 1), (1, 0)):
            x, y = i + skip_a, j + skip_b
            size = min(_PROBE, i_end - x, j_end - y)
            if (size > 0 or x == i_end and y == j_end) and a[x:x + size] == b[y:y + size]:
                return skip_a, skip_b
    return None


def _patience(a: Sequence, b: Sequence, i: int, i_end: int, j: int, j_end: int, anchors: set) -> list:
    """The longest chain of `anchors` in a[i:i_end] that ascends in b[j:j_end] too, last first."""
    at_b = {line: k for k, line in enumerate(b[j:j_end], j) if line in anchors}
    pairs = [(k, at_b[line]) for k, line in enumerate(a[i:i_end], i) if line in at_b]
    # tops[t]: the least b position ending a chain of t+1 anchors, ends[t] the pair
    # that ends it; back[p]: the pair before pair p in its chain.
    tops: List[int] = []
    ends: List[int] = []
    back: List[int] = []
    for p, (_, j_p) in enumerate(pairs):
        t = bisect.bisect_left(tops, j_p)
        back.append(ends[t - 1] if t else -1)
        if t == len(tops):
            tops.append(j_p)
            ends.append(p)
        else:
            tops[t], ends[t] = j_p, p
    found, p = [], ends[-1] if ends else -1
    while p >= 0:
        found.append(pairs[p])
        p = back[p]
    return found


def _gap(a: Sequence, b: Sequence, i: int, i_end: int, j: int, j_end: int, blocks: list,
         in_a: Optional[Container] = None, in_b: Optional[Container] = None) -> None:
    """Add the blocks of a gap between anchors: whole if it is small once the lines
    found on one side only are set aside, else a window at a time, each window's
    first block grown as far as the lines stay equal.  `in_a`, `in_b` as _paired's."""
    found = _paired(a, b, i, i_end, j, j_end, _SMALL_GAP, in_a, in_b) if i_end - i > 1 or j_end - j > 1 else []
    if found is not None:
        blocks += found
        return
    while i < i_end and j < j_end:
        width = _WINDOW
        while not (found := _paired(a, b, i, min(i + width, i_end), j, min(j + width, j_end), None)) \
                and (i + width < i_end or j + width < j_end):
            width *= 2
        if not found:
            return
        i, j, _ = found[0]
        size = _run(a, b, i, j, min(i_end - i, j_end - j))
        blocks.append((i, j, size))
        i, j = i + size, j + size


def _paired(a: Sequence, b: Sequence, i: int, i_end: int, j: int, j_end: int, most: Optional[int],
            in_a: Optional[Container] = None, in_b: Optional[Container] = None) -> Optional[list]:
    """The blocks of a[i:i_end] and b[j:j_end] with the lines found on one side only
    set aside (they never pair; a rewritten paragraph leaves its blank lines): the
    lines left if they are equal, else SequenceMatcher's; None if they differ and more
    than `most` pairs of lines remain to compare.  `in_a`, `in_b`: each one's lines."""
    in_a, in_b = set(a[i:i_end]) if in_a is None else in_a, set(b[j:j_end]) if in_b is None else in_b
    kept_a = list(compress(range(i, i_end), map(in_b.__contains__, a[i:i_end])))
    kept_b = list(compress(range(j, j_end), map(in_a.__contains__, b[j:j_end])))
    if len(kept_a) != len(kept_b) or not all(map(eq, map(a.__getitem__, kept_a), map(b.__getitem__, kept_b))):
        if most is not None and len(kept_a) * len(kept_b) > most:
            return None
        lines_a, lines_b = list(map(a.__getitem__, kept_a)), list(map(b.__getitem__, kept_b))
        blocks = difflib.SequenceMatcher(None, lines_a, lines_b, autojunk=False).get_matching_blocks()
        kept_a = list(chain.from_iterable(kept_a[x:x + size] for x, _, size in blocks))
        kept_b = list(chain.from_iterable(kept_b[y:y + size] for _, y, size in blocks))
    # kept_a[k] - k and kept_b[k] - k never fall, so their sum stays level exactly
    # along a run of pairs that is a block.
    level = list(map(add, map(sub, kept_a, range(len(kept_a))), map(sub, kept_b, range(len(kept_b)))))
    starts = [0, *compress(range(1, len(level)), map(ne, level, level[1:]))] if level else []
    sizes = map(sub, starts[1:] + [len(level)], starts)
    return list(zip(map(kept_a.__getitem__, starts), map(kept_b.__getitem__, starts), sizes))


def _slide(a: Sequence, b: Sequence, hunks: List[Hunk]) -> List[Hunk]:
    """Each pure insertion or deletion at its canonical place (step 2); hunks that come
    to touch become one."""
    out: List[Hunk] = []
    for k, (a_lo, a_hi, b_lo, b_hi) in enumerate(hunks):
        if a_lo == a_hi or b_lo == b_hi:
            index = 2 if a_lo == a_hi else 0  # where the changed side's bounds sit in a hunk
            seq, lo, hi = (b, b_lo, b_hi) if index else (a, a_lo, a_hi)
            floor = out[-1][index + 1] if out else 0
            ceiling = hunks[k + 1][index] if k + 1 < len(hunks) else len(seq)
            up = 0
            while lo - up > floor and seq[lo - up - 1] == seq[hi - up - 1]:
                up += 1
            if not (out and lo - up == floor):
                up = 0
                while hi - up < ceiling and seq[hi - up] == seq[lo - up]:
                    up -= 1
            a_lo, a_hi, b_lo, b_hi = a_lo - up, a_hi - up, b_lo - up, b_hi - up
        if out and out[-1][1] == a_lo and out[-1][3] == b_lo:
            a_lo, b_lo = out.pop()[0::2]
        out.append((a_lo, a_hi, b_lo, b_hi))
    return out


# ------------------------------------------------------------- command line

def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m diff3 OURS BASE THEIRS`: print the merge; exit 0 clean, 1 conflicts, 2 trouble."""
    parser = argparse.ArgumentParser(prog="mark-diff3", description=(
        "Three-way merge of text files, written to stdout with git-style conflict markers."))
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    for name in ("ours", "base", "theirs"):
        parser.add_argument(name)
    parser.add_argument("--diff3", action="store_true", help="also show the base lines in conflicts")
    parser.add_argument("-L", dest="labels", action="append", default=[], metavar="LABEL",
                        help="label for ours, then base, then theirs (default: the file names)")
    args = parser.parse_args(argv)
    paths = (args.ours, args.base, args.theirs)
    if len(args.labels) > 3:
        parser.error("-L may be given at most three times")
    texts = []
    for path in paths:
        try:
            with open(path, "rb") as file:
                texts.append(file.read().decode("utf-8"))
        except (OSError, UnicodeDecodeError) as error:
            why = f"not UTF-8 (byte {error.start})" if isinstance(error, UnicodeDecodeError) else error.strerror
            print(f"mark-diff3: {path}: {why}", file=sys.stderr)
            return 2
    labels = tuple(args.labels) + paths[len(args.labels):]
    merged, had_conflict = diff3(texts[1], texts[0], texts[2], style="diff3" if args.diff3 else "merge", labels=labels)
    sys.stdout.buffer.write(merged.encode("utf-8"))
    sys.stdout.flush()
    return 1 if had_conflict else 0


if __name__ == "__main__":
    sys.exit(main())
