"""Line-based three-way merge with git-style conflict markers.

    >>> from diff3 import diff3
    >>> base = "# Title\\n\\nIntro.\\n\\nBody.\\n"
    >>> ours = "# Title\\n\\nIntro, revised.\\n\\nBody.\\n"
    >>> theirs = "# Title\\n\\nIntro.\\n\\nBody, revised.\\n"
    >>> diff3(base, ours, theirs)
    Merge(merged='# Title\\n\\nIntro, revised.\\n\\nBody, revised.\\n', had_conflict=False)

    $ python -m diff3 OURS BASE THEIRS      # or mark-diff3; exit 0 clean, 1 conflicts, 2 trouble

Two people edited copies of the same document ("base"): "ours" and
"theirs".  `diff3` diffs base against each side, lays the two lists of
changed regions ("hunks") side by side on the base's line numbers, and
decides per place:

* changed by one side only: that side's lines are taken;
* changed by both, identically: the lines appear once;
* changed by both, differently: a conflict block (drawn here with a
  margin of "| ", which the merge does not write)
      | <<<<<<< ours
      | ours' lines
      | ||||||| base          (only with style="diff3")
      | base lines
      | =======
      | theirs' lines
      | >>>>>>> theirs
  and `had_conflict` is True.

A clean merge is published with no one looking, so it must be right:
when the texts leave any doubt about where an edit belongs relative to the
other side's, the two are a conflict.  The exact rule:

* Each side's hunks are put at one canonical place first (git's change
  compaction): a pure insertion or deletion that can slide up onto the
  hunk before it joins it ("insert a ticked box, delete the box below" is
  "tick the box"); any other slides as far down as it goes, so the same
  change made by both sides sits at the same place and appears once.
* Each hunk then gets its *reach*: the base lines it could equally cover
  under another diff of the same text.  That is where it, or the tail or
  head of either half of a replacement, could slide past equal lines (not
  for a line-for-line edit of similar lines, whose shared start and end
  make 0.6 of the longer: a ticked box stays that box);
  where the searches from the front and from the back of a gap of
  repeated lines pair them differently, or of a hunk's *zone*: the hunk
  grown over the lines next to it that it repeats, across equal runs the
  diff trimmed (a box added to a run of equal boxes could sit anywhere in
  the run); and, when a side removes or adds a block of text lines found
  elsewhere too (edits in place aside), the same with blank lines left
  out, and wherever that diff pairs text lines otherwise than the one
  with blank lines (which of two equal sections was deleted is then a
  tie).  An ours hunk that no reach of theirs could come near skips this:
  it collides with nothing and is merged by copying ours.
* Two hunks of different sides *collide*, and are decided together, when
  their reaches share a base line, when both insert at one point, or when
  one inserts strictly inside the other's reach.  Hunks that only meet at
  a boundary collide too unless the order of the two edits is certain:
  neither inserts next to where the other removes more lines than it adds
  (text added after a deleted line has lost its place), neither's reach is
  wider than itself, and, where one of them inserts, the base lines on
  both sides of the boundary are *firm*: once in base and at most once in
  each side.  So ours changing line 5 and theirs line 6 merge cleanly (git
  merge-file and GNU diff3 call that a conflict), and so does theirs
  adding a line after line 5 where lines 5 and 6 are unique; next to one
  of many blank lines, it does not.  One side adding a section while the
  other deletes a different section merges cleanly.  A deletion that
  overlaps the other side's modification is a conflict, so no edit is
  ever dropped silently.
* A run of changes that collide gets a second look, since a reach only
  says where a change *could* sit, not whether that would change the
  merge.  Around the run (out to the nearest lines found once in base and
  once in the side, at most 200 lines), each side's diff is read in every
  way a person may have made it: the diff above, and the cheapest edit
  scripts where deleting a line, inserting one, or replacing one with a
  similar line each cost one, searched from the front and from the back,
  ties going to deletions or to insertions first, with all lines or text
  lines first.  The run splits between two base lines wherever all
  readings of both sides pair them alike and no edits of both sides meet
  there (both insert, or one inserts next to where the other removes more
  than it adds).  A piece that every pair of readings, one per side and each
  taken as certain, merges without collision (touching edits merged one
  after the other) and to the same lines is merged; the rest stays a
  conflict.  So theirs ticking the second of two equal boxes merges with
  ours adding a box between them: every reading agrees on the order.
  The readings also widen reaches first: where the other side changed
  lines in the stretch around a side's doubt, the doubt grows over all
  that any reading departs from the diff across.  (Of four equal
  sections theirs may have deleted any one, so it meets ours renaming a
  heading; ours "deleting" a box theirs deleted may have ticked it.)
  Where the run or stretch is too long to read again, the rule above
  decides alone.
* In a conflict (style "merge"), the lines both sides have in common,
  by a diff of the two, are taken out of the block, which splits where
  they are, as git's "zealous" merge does.  This shapes a conflict, never
  decides one; a block whose two sides are alike shows the base lines.

Lines are split on "\\n" only (never on the other separators that
`str.splitlines` honours) and keep their endings, so CRLF documents come
back byte-identical where nothing changed.  A line without a trailing
newline (the last line of a document) gets one when anything follows it in
the output, so two lines are never glued together; marker lines use the
document's line ending.  `had_conflict` is decided by the algorithm, never
by looking for markers in the text, so a document may contain "=======".

The two-way diff behind it (`_matching_blocks`) must be fine-grained and fast
on markdown, where blank lines and list items repeat thousands of times.
`difflib.SequenceMatcher` alone cannot do both: with autojunk it ignores
popular lines (a blank-line-heavy document becomes one huge change), and
without it, it is quadratic on them.  So the diff works in layers:

1. trim the common prefix and suffix;
2. anchor on lines that occur exactly once in both sequences, in the
   longest order-preserving chain of them (patience diff), and treat the gaps
   between anchors the same way.  Usually no such line moved and the chain
   is all of them: one walk along the first sequence confirms it while it
   extends each anchor into its run of equal lines, and only a walk that
   meets a moved line computes the chain.  A rewrite leaves most lines on
   one side only, a Python step each for the walk: where a sample shows
   that, the lines found on both sides are tried in turn first (if they
   come in the same order on both sides, pairing them so is the one
   longest matching);
3. a small gap, or one without such lines, first drops the lines found
   on one side only (they can never match; a rewritten paragraph leaves
   just its blank lines), then is diffed by Myers' O(ND) shortest-edit
   search, which pairs repeated lines where a person would (difflib's
   SequenceMatcher, longest block first, does not); runs of equal lines
   are always measured by comparing list slices, at C speed;
4. a large gap gets an edit budget of about sqrt(its length): past it,
   the path to the point the search got furthest to is kept and a new
   search starts from there (xdiff splits at its best diagonal the same
   way), so a gap where nearly everything changed gets a coarser diff
   whose blocks still stay local.

`python bench.py diff3` measures all this against `git merge-file`, and
`python bench.py shapes` how often each merges clean and wrong.
"""

import argparse
import array
import bisect
import functools
import math
import operator
import os
import sys
from collections import Counter
from itertools import chain, compress, count, filterfalse
from typing import List, NamedTuple, Optional, Sequence, Tuple

__version__ = "0.2.0"  # the release this file is from; vendored copies keep saying it
__all__ = ["diff3", "Merge", "get_hunks", "split_lines", "join_lines", "main"]


class Merge(NamedTuple):
    merged: str  # the merged text, with conflict blocks where needed
    had_conflict: bool


Hunk = Tuple[int, int, int, int]  # (a_lo, a_hi, b_lo, b_hi): a[a_lo:a_hi] became b[b_lo:b_hi]


def diff3(
    base: str,
    ours: str,
    theirs: str,
    *,
    style: str = "merge",
    labels: Sequence[str] = ("ours", "base", "theirs"),
) -> Merge:
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
    _check_labels(labels)

    texts = [split_lines(base), split_lines(ours), split_lines(theirs)]
    eol = _line_ending(texts)
    markers = _Markers("<<<<<<< " + labels[0] + eol, "||||||| " + labels[1] + eol, "=======" + eol,
                       ">>>>>>> " + labels[2] + eol, style == "diff3")
    out, had_conflict = _merge_lines(*texts, markers)
    if not had_conflict and _new_line_held_twice(out, *texts):
        out, had_conflict = _one_block(*texts, markers), True
    # Only a document's last line can lack a newline; if none does, plain join.
    ended = all(lines[-1].endswith("\n") for lines in texts if lines)
    return Merge("".join(out) if ended else join_lines(out, eol), had_conflict)


def get_hunks(a: Sequence, b: Sequence) -> List[Hunk]:
    """The places where `b` differs from `a`: (a_lo, a_hi, b_lo, b_hi) each.

    a[a_lo:a_hi] became b[b_lo:b_hi].  Hunks are ascending and separated
    by at least one equal element.
    """
    return _diff(a, b, [])


def split_lines(text: str) -> List[str]:
    """Split `text` after each "\\n", keeping the endings; "" has no lines."""
    lone_cr = "\r" in text and text.count("\r") != text.count("\r\n")
    if not lone_cr and not any(c in text for c in _OTHER_BREAKS):
        return text.splitlines(keepends=True)  # the same lines here, at C speed
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


# ---------------------------------------------------------------- helpers

_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # str.splitlines splits on these, and on a lone \r


def _check_labels(labels: Sequence[str]) -> None:
    if (
        isinstance(labels, str)
        or not isinstance(labels, (tuple, list))
        or len(labels) != 3
        or not all(isinstance(label, str) for label in labels)
    ):
        raise TypeError(f"labels must be a tuple of three str (ours, base, theirs), not {labels!r}")
    if any("\n" in label or "\r" in label for label in labels):
        raise ValueError(f"labels must not contain line breaks: {labels!r}")


def _line_ending(texts: Sequence[List[str]]) -> str:
    """The document's line ending: that of the first ended line, base first."""
    for lines in texts:
        if lines and lines[0].endswith("\n"):
            return "\r\n" if lines[0].endswith("\r\n") else "\n"
    return "\n"


OURS, THEIRS = 0, 1  # the two sides, as indices and as a change's `side`


def _new_line_held_twice(merged: List[str], base: List[str], ours: List[str], theirs: List[str]) -> bool:
    """The safety net under a clean merge: does it hold a text line base lacks more
    often than ours and theirs each do?  Then a change was merged twice."""
    def tally(lines: List[str]) -> Counter:
        return Counter(line.rstrip("\r\n") for line in lines if not line.isspace())

    merged_n, base_n, ours_n, theirs_n = map(tally, (merged, base, ours, theirs))
    return any(n > max(ours_n[line], theirs_n[line]) and not base_n[line] for line, n in merged_n.items())


def _one_block(base: List[str], ours: List[str], theirs: List[str], markers: "_Markers") -> List[str]:
    """Every change as one conflict block; the lines all three share at either end stay outside."""
    start, middle, separator, end, with_base = markers
    shortest = min(len(base), len(ours), len(theirs))
    head = 0
    while head < shortest and base[head] == ours[head] == theirs[head]:
        head += 1
    tail = 0
    while tail < shortest - head and base[-1 - tail] == ours[-1 - tail] == theirs[-1 - tail]:
        tail += 1

    def middle_of(lines: List[str]) -> List[str]:
        return lines[head:len(lines) - tail]

    block = [start, *middle_of(ours), *([middle, *middle_of(base)] if with_base else []),
             separator, *middle_of(theirs), end]
    return ours[:head] + block + ours[len(ours) - tail:]


class _Markers(NamedTuple):
    """The lines that frame a conflict block."""

    start: str
    base: str
    separator: str
    end: str
    with_base: bool  # whether blocks show the base lines (style "diff3")


def _merge_lines(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str],
                 markers: _Markers) -> Tuple[List[str], bool]:
    """Merge three line lists; returns the merged lines and whether any conflicted.

    A block that leaves the base lines out also leaves out the lines both
    sides have in common, splitting where they are (git's "zealous" merge).
    A block whose two sides are alike (the second look found readings
    that place them differently) always shows base.
    """
    start, middle, separator, end, with_base = markers
    text = list(filterfalse(str.isspace, base))
    unique = set(text)
    if len(unique) < len(text):
        unique = set()  # some text line of base repeats
    hunks, spans = _diff_with_doubts(base, ours, unique)
    theirs_hunks, theirs_spans = _diff_with_doubts(base, theirs, unique)
    texts, diffs, firm = (base, ours, theirs), (hunks, theirs_hunks), _Firmness(base, ours, theirs)
    read: dict = {}  # the second look's readings, by side and stretch
    spans = _departed(texts, diffs, firm, OURS, spans, read)
    theirs_spans = _departed(texts, diffs, firm, THEIRS, theirs_spans, read)
    changes = _changes(base, theirs, THEIRS, theirs_hunks, theirs_spans)
    # An ours hunk whose room (up to its neighbours, and over its doubt spans)
    # meets the reach of no change of theirs cannot collide: it is merged by
    # copying ours, and only its growth counts (`apart`).  Where ours rewrote
    # much and theirs little, that is most of them.
    near = _near(hunks, spans, [(c.reach_lo, c.reach_hi) for c in changes])
    apart = list(compress(hunks, map(operator.not_, near)))
    changes = sorted(changes + _changes(base, ours, OURS, hunks, spans, near))
    out: List[str] = []
    had_conflict = False
    # How many lines ours and theirs have gained so far: added to a base
    # position outside that side's hunks, it gives the position in that side.
    shift_o = shift_t = 0
    passed = 0  # the hunks of `apart` that lie behind
    # Wherever theirs changed nothing, ours holds the merge: such stretches
    # are copied from ours in one slice, up to the next place theirs changed.
    copied = 0  # ours[:copied] is in `out` already, or was replaced there
    for cluster in _clusters(changes, firm):
        while passed < len(apart) and apart[passed][0] < cluster.lo:
            a_lo, a_hi, b_lo, b_hi = apart[passed]
            shift_o += (b_hi - b_lo) - (a_hi - a_lo)
            passed += 1
        o_lo, t_lo = cluster.lo + shift_o, cluster.lo + shift_t
        shift_o += cluster.growth[OURS]
        shift_t += cluster.growth[THEIRS]
        o_hi, t_hi = cluster.hi + shift_o, cluster.hi + shift_t
        if THEIRS not in cluster.sides:
            continue
        mine, yours = ours[o_lo:o_hi], theirs[t_lo:t_hi]
        if mine == yours:
            continue
        out += ours[copied:o_lo]
        copied = o_hi
        if OURS not in cluster.sides:
            out += yours
            continue
        for piece in _settle(texts, diffs, firm, cluster.lo, cluster.hi, ((o_lo, o_hi), (t_lo, t_hi)), read):
            if piece.merged is not None:
                out += piece.merged
                continue
            had_conflict = True
            if with_base or piece.mine == piece.yours:
                out += [start, *piece.mine, middle, *base[piece.lo:piece.hi], separator, *piece.yours, end]
                continue
            # Lines both sides have in common stay out of the block, which
            # splits where they are (git's "zealous" merge refines it the same way).
            m = 0
            for m_lo, m_hi, y_lo, y_hi in get_hunks(piece.mine, piece.yours):
                out += [*piece.mine[m:m_lo], start, *piece.mine[m_lo:m_hi], separator, *piece.yours[y_lo:y_hi], end]
                m = m_hi
            out += piece.mine[m:]
    out += ours[copied:]
    return out, had_conflict



class _Change(NamedTuple):
    """One side's hunk, with the stretch of base it could equally sit at."""

    reach_lo: int  # the base range over every position the hunk may slide to
    reach_hi: int
    hunk: Hunk  # where it sits: slid as far down as it goes
    side: int  # OURS or THEIRS

    @property
    def insertion(self) -> bool:
        return self.hunk[0] == self.hunk[1]

    @property
    def doubtful(self) -> bool:
        return (self.reach_lo, self.reach_hi) != self.hunk[:2]


class _Cluster(NamedTuple):
    lo: int  # the base range it covers
    hi: int
    sides: set  # the sides with a hunk in it
    growth: List[int]  # lines each side gained in it, by side


def _diff_with_doubts(base: List[str], side: List[str], unique: set) -> Tuple[List[Hunk], List[Tuple[int, int]]]:
    """The hunks from `base` to `side`, and the joined base ranges where their alignment is in doubt.

    `unique` holds base's text lines when none of them repeats, else nothing.
    """
    doubts: List[Tuple[int, int]] = []
    hunks = _diff(base, side, doubts)
    doubts += _zone_doubts(base, side, hunks)
    if _repeated(base, side, hunks, unique):
        doubts += _doubts_without_blanks(base, side, hunks)
    return hunks, _union(doubts)


def _zone_doubts(a: Sequence, b: Sequence, hunks: List[Hunk]) -> List[Tuple[int, int]]:
    """The ranges of `a` where another diff, just as short, pairs lines otherwise.

    The diff trims equal lines and extends runs of them greedily, so it
    misses that a box added to a run of equal boxes could sit anywhere in
    the run, with a task added next to it one box higher or lower (a
    deleted box, the same).  Around each hunk the lines that repeat its own
    make a zone; outside hunks the lines are equal, so the zone's lines of
    `b` follow from those of `a`.  In each zone, a search from the front
    and one from the back find the two extreme diffs, and where they pair
    lines differently, the author may have meant either.  A zone with more
    edits than a search may try is left to the doubts of its gaps.
    """
    doubts: List[Tuple[int, int]] = []
    k = 0
    for lo, hi in _zones(a, b, hunks):
        while hunks[k][1] < lo:
            k += 1
        first = last = k
        while last + 1 < len(hunks) and hunks[last + 1][0] <= hi:
            last += 1
        lo, hi = min(lo, hunks[first][0]), max(hi, hunks[last][1])
        window_a = a[lo:hi]
        window_b = b[hunks[first][2] - (hunks[first][0] - lo):hunks[last][3] + (hi - hunks[last][1])]
        n, m = len(window_a), len(window_b)
        if sum(a_hi - a_lo + b_hi - b_lo for a_lo, a_hi, b_lo, b_hi in hunks[first:last + 1]) > _edit_budget(n, m):
            continue
        forward = sorted(_myers_blocks(window_a, window_b, 0, n, 0, m))
        backward = _backward_blocks(window_a, window_b)
        doubts += [(lo + d_lo, lo + d_hi) for d_lo, d_hi in _disagreements(forward, backward, n, m)]
    return doubts


def _zones(a: Sequence, b: Sequence, hunks: List[Hunk]) -> List[List[int]]:
    """Ascending ranges [lo, hi] of `a`: each hunk (not an edit in place)
    grown over the neighbouring lines found among its own lines, joined
    where they meet."""
    zones: List[List[int]] = []
    for a_lo, a_hi, b_lo, b_hi in hunks:
        old, new = a[a_lo:a_hi], b[b_lo:b_hi]
        lo, hi = a_lo, a_hi
        if zones and zones[-1][1] >= a_lo:  # it lies in the zone before: grow that one
            lo, hi = zones.pop()
            hi = max(hi, a_hi)
        # Cheap tests first: most hunks meet no line they repeat.
        grows = (lo and (a[lo - 1] in old or a[lo - 1] in new)) or (hi < len(a) and (a[hi] in old or a[hi] in new))
        if grows and not _edited_in_place(old, new):  # a ticked box stays that box
            vocabulary = set(old)
            vocabulary.update(new)
            while hi < len(a) and a[hi] in vocabulary:
                hi += 1
            while True:
                while lo and a[lo - 1] in vocabulary:
                    lo -= 1
                if not (zones and zones[-1][1] >= lo):
                    break
                lo = zones.pop()[0]  # it reached the zone before: they join, and it grows on above
        if (lo, hi) != (a_lo, a_hi):
            zones.append([lo, hi])
    return zones


def _room(hunks: List[Hunk], k: int, n: int) -> Tuple[int, int]:
    """The base range (of n lines) hunk k may slide in: it stays apart from its neighbours."""
    return hunks[k - 1][1] + 1 if k else 0, hunks[k + 1][0] - 1 if k + 1 < len(hunks) else n


def _near(hunks: List[Hunk], spans: List[Tuple[int, int]], others: List[Tuple[int, int]]) -> List[bool]:
    """Per hunk, whether the base range its reach never leaves meets (or
    touches) one of `others`: the range up to its neighbours (`_room`), and
    the doubt `spans` that meet the hunk."""
    joined = _union(others)
    starts, ends = [hunk[0] for hunk in hunks], [hunk[1] for hunk in hunks]
    near = [False] * len(hunks)
    for lo, hi in joined:
        # The hunks whose room meets lo..hi: from the last one starting at
        # or before lo to the first one ending at or after hi.
        first, last = max(bisect.bisect_right(starts, lo) - 1, 0), min(bisect.bisect_left(ends, hi) + 1, len(hunks))
        near[first:last] = [True] * (last - first)
    joined_starts = [lo for lo, _ in joined]
    for lo, hi in spans:
        k = bisect.bisect_right(joined_starts, hi) - 1
        if k >= 0 and joined[k][1] >= lo:  # then so do the hunks the span meets
            first, last = bisect.bisect_left(ends, lo), bisect.bisect_right(starts, hi)
            near[first:last] = [True] * (last - first)
    return near


def _changes(base: List[str], side: List[str], name: int, hunks: List[Hunk], spans: List[Tuple[int, int]],
             near: Optional[List[bool]] = None) -> List[_Change]:
    """The hunks, each with its reach: all of them, or only those `near` says."""
    starts = [lo for lo, _ in spans]
    changes = []
    for k, hunk in enumerate(hunks):
        if near is not None and not near[k]:
            continue
        lo, hi, _, _ = hunk
        floor, ceiling = _room(hunks, k, len(base))
        if floor < lo or hi < ceiling:
            lo, hi = _reach(base, side, hunk, floor, ceiling)
        # Where two shortest diffs disagree, either could be what was meant.
        lo, hi = _over_spans(lo, hi, hunk, spans, starts)
        changes.append(_Change(lo, hi, hunk, name))
    return changes


def _over_spans(lo: int, hi: int, hunk: Hunk, spans: List[Tuple[int, int]], starts: List[int]) -> Tuple[int, int]:
    """The range lo:hi widened over every doubt span that meets `hunk`."""
    d = bisect.bisect_right(starts, hunk[1]) - 1
    while d >= 0 and spans[d][1] >= hunk[0]:
        lo, hi = min(lo, spans[d][0]), max(hi, spans[d][1])
        d -= 1
    return lo, hi


def _union(ranges: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """Ranges that overlap, joined: ascending, and apart or touching."""
    joined: List[Tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if joined and lo < joined[-1][1]:
            joined[-1] = (joined[-1][0], max(hi, joined[-1][1]))
        else:
            joined.append((lo, hi))
    return joined


def _repeated(base: List[str], side: List[str], hunks: List[Hunk], unique: set) -> bool:
    """Whether hunks remove or add a block of text lines found elsewhere too.

    A block of two text lines or more (hunks with only blank lines between
    them count as one), one of them also found outside it: the mark of a
    section that is there twice.  A single line (a ticked box among equal
    boxes) is placed by the blank lines around it.
    """
    # At C speed first: most documents repeat no text line at all.
    if unique and unique.isdisjoint(chain.from_iterable(side[b_lo:b_hi] for _, _, b_lo, b_hi in hunks)):
        return False
    base_counts, side_counts = Counter(base), Counter(side)

    def repeats(a_lo: int, a_hi: int, b_lo: int, b_hi: int) -> bool:
        return (any(base_counts[line] > 1 for line in base[a_lo:a_hi] if not line.isspace())
                or any(base_counts[line] or side_counts[line] > 1 for line in side[b_lo:b_hi] if not line.isspace()))

    if not any(repeats(*hunk) for hunk in hunks):
        return False
    # A line edited in place (a ticked box) stays where the blank lines put it.
    hunks = [(a_lo, a_hi, b_lo, b_hi) for a_lo, a_hi, b_lo, b_hi in hunks
             if not _edited_in_place(base[a_lo:a_hi], side[b_lo:b_hi])]
    return any(repeats(*hunk) and _block_text_lines(base, side, hunks, k) > 1 for k, hunk in enumerate(hunks))


def _block_text_lines(base: List[str], side: List[str], hunks: List[Hunk], k: int) -> int:
    """How many text lines the block of hunk k removes, or adds if more:
    its neighbours join it while only blank lines lie between them."""
    first = last = k
    while first and all(line.isspace() for line in base[hunks[first - 1][1]:hunks[first][0]]):
        first -= 1
    while last + 1 < len(hunks) and all(line.isspace() for line in base[hunks[last][1]:hunks[last + 1][0]]):
        last += 1
    block = hunks[first:last + 1]
    removed = sum(not line.isspace() for a_lo, a_hi, _, _ in block for line in base[a_lo:a_hi])
    added = sum(not line.isspace() for _, _, b_lo, b_hi in block for line in side[b_lo:b_hi])
    return max(removed, added)


def _doubts_without_blanks(base: Sequence[str], side: Sequence[str], hunks: List[Hunk]) -> List[Tuple[int, int]]:
    """The base ranges where the diff of the text lines alone is in doubt.

    Blank lines tip the count of a shortest diff: ours deleting the first
    of two equal sections pairs fewer blank lines than deleting the second,
    yet either is what ours may have meant.  Without blank lines the two
    are equally short, and the doubt shows as a hunk that can slide, a gap
    whose two searches disagree, or text lines that `hunks` (the diff with
    blank lines) pairs otherwise.
    """
    (where_a, a), (where_b, b) = _text_lines(base), _text_lines(side)
    doubts: List[Tuple[int, int]] = []
    text_hunks = _diff(a, b, doubts)
    doubts += _slides(a, b, text_hunks)
    doubts += _disagreements(_blocks(text_hunks, len(a), len(b)),
                             _text_pairs(hunks, base, side, where_a, where_b), len(a), len(b))
    where_a.append(len(base))  # each as wide as the blank lines around it allow
    return [(where_a[lo - 1] + 1 if lo else 0, where_a[hi]) for lo, hi in doubts]


def _text_lines(lines: Sequence[str]) -> Tuple[List[int], List[str]]:
    """Where the lines that are not blank are, and those lines."""
    where = [i for i, line in enumerate(lines) if not line.isspace()]
    return where, [lines[i] for i in where]


def _slides(a: Sequence, b: Sequence, hunks: List[Hunk]) -> List[Tuple[int, int]]:
    """The reaches of the hunks (compacted, from a to b) that could slide."""
    reaches = []
    for k, hunk in enumerate(hunks):
        reach = _reach(a, b, hunk, *_room(hunks, k, len(a)))
        if reach != hunk[:2]:
            reaches.append(reach)
    return reaches


def _text_pairs(hunks: List[Hunk], base: Sequence[str], side: Sequence[str], where_a: List[int],
                where_b: List[int]) -> List[Tuple[int, int, int]]:
    """The text lines `hunks` pairs, as matching blocks of the text lines alone."""
    index_a = {i: n for n, i in enumerate(where_a)}
    index_b = {j: n for n, j in enumerate(where_b)}
    pairs = ((index_a[i + t], index_b[j + t]) for i, j, size in _blocks(hunks, len(base), len(side))
             for t in range(size) if i + t in index_a)
    return _coalesce(pairs)


def _diff(a: Sequence, b: Sequence, doubts: List[Tuple[int, int]]) -> List[Hunk]:
    """The compacted hunks from a to b; doubts as `_matching_blocks` adds them."""
    return _compact(a, b, _hunks(_matching_blocks(a, b, doubts), len(a), len(b)))


def _hunks(blocks: List[Tuple[int, int, int]], n: int, m: int) -> List[Hunk]:
    """The hunks between ascending matching blocks of an n-element a and an m-element b."""
    hunks = []
    i = j = 0
    for ai, bj, size in blocks + [(n, m, 0)]:
        if i < ai or j < bj:
            hunks.append((i, ai, j, bj))
        i, j = ai + size, bj + size
    return hunks


def _reach(a: Sequence, b: Sequence, hunk: Hunk, floor: int, ceiling: int) -> Tuple[int, int]:
    """The base range hunk k could cover under another diff with the same result.

    A block of deleted or inserted lines that meets a copy of itself can
    sit lower or higher and make the same text: "x\n\ny\n" gains a blank
    line before or after its own.  The same holds for the last (or first)
    lines of either half of a replacement, which then splits in two.  Both
    sides' diffs are slid as far down as they go; this says how far each
    hunk's lines could have gone either way, within a[floor:ceiling].
    """
    a_lo, a_hi, b_lo, b_hi = hunk
    up = down = 0
    # Lines can only slide past a neighbour they have a copy of.
    if a_lo > floor and (a[a_lo - 1] in a[a_lo:a_hi] or a[a_lo - 1] in b[b_lo:b_hi]):
        up = max(_slide(a, a_lo, a_hi, a_lo - floor, up=True), _slide(b, b_lo, b_hi, a_lo - floor, up=True))
    if a_hi < ceiling and (a[a_hi] in a[a_lo:a_hi] or a[a_hi] in b[b_lo:b_hi]):
        down = max(_slide(a, a_lo, a_hi, ceiling - a_hi), _slide(b, b_lo, b_hi, ceiling - a_hi))
    if (up or down) and _edited_in_place(a[a_lo:a_hi], b[b_lo:b_hi]):
        return a_lo, a_hi  # a ticked box among equal boxes is that box, ticked
    return a_lo - up, a_hi + down


def _edited_in_place(old: Sequence, new: Sequence) -> bool:
    """Whether each line of `old` became a similar line of `new`, one for one."""
    return len(old) == len(new) and all(isinstance(x, str) and isinstance(y, str) and _similar(x, y)
                                        for x, y in zip(old, new))


def _slide(seq: List, lo: int, hi: int, limit: int, up: bool = False) -> int:
    """How far some tail of seq[lo:hi] (or head, `up`) could move past its neighbours.

    A tail seq[j:hi] can move down by t when it starts like seq[hi:hi+t];
    a head seq[lo:j] can move up by t when it ends like seq[lo-t:lo].
    """
    edge = seq[lo - 1] if up else seq[hi]
    best, j = 0, lo
    while True:
        try:
            j = seq.index(edge, j, hi)  # where such a tail (or after such a head) starts
        except ValueError:
            return best
        if up:
            best = max(best, _run_length(seq, seq, j + 1, lo, limit, backward=True))
        else:
            best = max(best, _run_length(seq, seq, j, hi, limit))
        j += 1


def _compact(a: Sequence, b: Sequence, hunks: List[Hunk]) -> List[Hunk]:
    """Put each pure insertion or deletion where it reads best (git's change compaction).

    A diff may put such a hunk at any of several places next to equal
    lines.  One that can slide up onto the hunk before it joins it: a
    search that found "insert a ticked box, delete the box below" meant
    "tick the box".  Any other slides as far down as it goes, so that two
    sides making the same change put it at the same place.  Hunks stay at
    least one equal line apart.
    """
    compacted: List[Hunk] = []
    for k, hunk in enumerate(hunks):
        a_lo, a_hi, b_lo, b_hi = hunk
        if (a_lo == a_hi) == (b_lo == b_hi):
            compacted.append(hunk)
            continue
        seq, lo, hi = (b, b_lo, b_hi) if a_lo == a_hi else (a, a_lo, a_hi)
        if compacted:
            gap = a_lo - compacted[-1][1]  # equal lines since the hunk before
            if _run_length(seq, seq, lo, hi, gap, backward=True) == gap:
                p_lo, _, pb_lo, _ = compacted.pop()
                compacted.append((p_lo, a_hi - gap, pb_lo, b_hi - gap))
                continue
        ceiling = hunks[k + 1][0] - 1 if k + 1 < len(hunks) else len(a)
        down = _run_length(seq, seq, lo, hi, ceiling - a_hi)
        compacted.append((a_lo + down, a_hi + down, b_lo + down, b_hi + down))
    return compacted


class _Firmness:
    """Whether a base line is "firm": once in base, at most once in each side.

    Next to a firm line a hunk's edge is certain: no other alignment of the
    diff could move it.  The counts are made the first time they are asked.
    """

    def __init__(self, base: Sequence[str], ours: Sequence[str], theirs: Sequence[str]):
        self._texts = (base, ours, theirs)
        self._counts: List[Counter] = []

    @property
    def counts(self) -> List[Counter]:
        """How often each line is in base, ours and theirs."""
        if not self._counts:
            self._counts = [Counter(text) for text in self._texts]
        return self._counts

    def __call__(self, i: int) -> bool:
        base = self._texts[0]
        if not 0 <= i < len(base):
            return True  # the start and end of the document are unique places
        line = base[i]
        in_base, in_ours, in_theirs = (counts[line] for counts in self.counts)
        return in_base == 1 and in_ours <= 1 and in_theirs <= 1


def _clusters(changes: List[_Change], firm) -> List[_Cluster]:
    """Group changes, sorted by reach, into runs that must be decided together.

    A change joins the group of each change of the other side it collides
    with.  The changes come in the order of where their reach starts, so
    the ones it could collide with are the other side's last change and
    the one reaching furthest down, in whatever group they are.  Groups
    whose lines interleave are then joined too: the runs come out apart,
    in the order of base.
    """
    parent = list(range(len(changes)))  # a forest: each group's changes point to its first

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = k = parent[parent[k]]
        return k

    last: List[Optional[int]] = [None, None]  # by side: indices into `changes`
    widest: List[Optional[int]] = [None, None]  # the one reaching furthest down
    for k, change in enumerate(changes):
        other = 1 - change.side
        for e in (last[other], widest[other]):
            if e is not None and _collide(change, changes[e], firm):
                parent[root(k)] = root(e)
        last[change.side] = k
        if widest[change.side] is None or change.reach_hi > changes[widest[change.side]].reach_hi:
            widest[change.side] = k
    runs: dict = {}  # by group: [lo, hi, sides, growth], as in _Cluster
    for k, change in enumerate(changes):
        a_lo, a_hi, b_lo, b_hi = change.hunk
        group = root(k)
        if group not in runs:
            runs[group] = [a_lo, a_hi, set(), [0, 0]]
        run = runs[group]
        if a_lo < run[0]:
            run[0] = a_lo
        if a_hi > run[1]:
            run[1] = a_hi
        run[2].add(change.side)
        run[3][change.side] += (b_hi - b_lo) - (a_hi - a_lo)
    clusters: List[_Cluster] = []
    for lo, hi, sides, growth in sorted(runs.values(), key=lambda run: run[:2]):
        if clusters and lo < clusters[-1].hi:  # lines of one lie among the other's
            before = clusters.pop()
            lo, hi, sides = before.lo, max(hi, before.hi), sides | before.sides
            growth = [before.growth[0] + growth[0], before.growth[1] + growth[1]]
        clusters.append(_Cluster(lo, hi, sides, growth))
    return clusters


def _collide(h: _Change, g: _Change, firm) -> bool:
    """Whether two changes of different sides must be decided together.

    They must when their reaches share a base line, when both insert at one
    point, or when one inserts strictly inside the other's reach.  Changes
    that only meet at a boundary are merged one after the other only when
    that order is certain: neither inserts next to where the other removes
    more lines than it adds (text added next to text removed has lost its
    place), neither could sit elsewhere, and, where one of them inserts,
    both base lines at the boundary are firm.
    """
    lo, hi = max(h.reach_lo, g.reach_lo), min(h.reach_hi, g.reach_hi)
    if lo != hi:
        return lo < hi
    h_point, g_point = h.reach_lo == h.reach_hi, g.reach_lo == g.reach_hi
    if h_point and g_point:
        return True
    if (h_point and g.reach_lo < lo < g.reach_hi) or (g_point and h.reach_lo < lo < h.reach_hi):
        return True
    if _unanchored(h, g) or _unanchored(g, h):
        return True
    if h.doubtful or g.doubtful:
        return True  # a change whose place is in doubt has no certain edge
    if not (h.insertion or g.insertion):
        return False  # each replaces its own lines: their order is that of the lines
    return not (firm(lo - 1) and firm(lo))


def _unanchored(h: _Change, g: _Change) -> bool:
    """Whether h inserts next to where g removes more lines than it adds:
    the text h added after (or before) them may have lost its place."""
    a_lo, a_hi, b_lo, b_hi = g.hunk
    return h.insertion and b_hi - b_lo < a_hi - a_lo


# ------------------------------------------------------------ second look

_SETTLE_LINES = 200  # the most lines a conflicting run, or the stretch read around it, may span to be read again


class _Readings(NamedTuple):
    """The ways one side's diff of a stretch, base[a_lo:a_hi] to side[b_lo:b_hi], may be read."""

    a_lo: int
    a_hi: int
    b_lo: int
    b_hi: int
    diffs: List[List[Hunk]]  # hunks counted from a_lo and b_lo; the first is the diff itself

    def placed(self, hunks: List[Hunk]) -> List[Hunk]:
        """Hunks of `diffs` counted from the start of base and of the side."""
        return [(a_lo + self.a_lo, a_hi + self.a_lo, b_lo + self.b_lo, b_hi + self.b_lo)
                for a_lo, a_hi, b_lo, b_hi in hunks]


class _Piece(NamedTuple):
    """A part of a conflicting run: settled (`merged` holds its lines) or not (None)."""

    lo: int  # its base range
    hi: int
    mine: List[str]
    yours: List[str]
    merged: Optional[List[str]]


def _settle(texts: Sequence[List[str]], diffs: Sequence[List[Hunk]], firm: _Firmness,
            lo: int, hi: int, edges: Sequence[Tuple[int, int]], read: dict) -> List[_Piece]:
    """A run of colliding changes, read again: the pieces it splits into, each settled or not.

    `texts` are base, ours and theirs, `diffs` the hunks of each side,
    `firm` holds the texts' line counts, `read` the readings made so far;
    the run is base[lo:hi], and ours[edges[0][0]:edges[0][1]] and
    theirs[edges[1][0]:edges[1][1]].
    Around the run each side's diff is read in every way `_readings`
    gives.  The run splits between two base lines wherever all readings of
    both sides pair them alike and no edits of the two sides meet there; a
    piece is settled when every reading of each side maps it to the same
    lines and each pair of readings, one per side and each taken as
    certain, merges it without collision and to the same lines.  A run or
    stretch too long to read again is left whole.
    """
    whole = [_Piece(lo, hi, texts[1][slice(*edges[OURS])], texts[2][slice(*edges[THEIRS])], None)]
    if hi - lo > _SETTLE_LINES or _no_piece_settles(texts, [_around(hunks, lo, hi) for hunks in diffs], lo, hi, edges):
        return whole
    stretches = [_stretch(texts, diffs, firm, side, lo, hi) for side in (OURS, THEIRS)]
    if None in stretches:
        return whole
    return _pieces(texts, lo, hi, edges, [_read(texts, diffs, side, stretches[side], read) for side in (OURS, THEIRS)])


def _departure(reading: _Readings, hunks: List[Hunk], lo: int, hi: int) -> Tuple[int, int]:
    """The base range around base[lo:hi] over which `hunks`, one of the readings, pairs
    lines otherwise than the diff itself does (and base[lo:hi] itself)."""
    n, m = reading.a_hi - reading.a_lo, reading.b_hi - reading.b_lo
    for d_lo, d_hi in _disagreements(_blocks(reading.diffs[0], n, m), _blocks(hunks, n, m), n, m):
        d_lo, d_hi = d_lo + reading.a_lo, d_hi + reading.a_lo
        if d_lo <= hi and lo <= d_hi:
            lo, hi = min(lo, d_lo), max(hi, d_hi)
    return lo, hi


def _departed(texts: Sequence[Sequence[str]], diffs: Sequence[List[Hunk]], firm: _Firmness, side: int,
              spans: List[Tuple[int, int]], read: dict) -> List[Tuple[int, int]]:
    """One side's doubt spans, grown over where its other readings depart from its diff
    around them, where the other side changed lines: the changes they could meet.

    (Of four equal sections, theirs may have deleted any; if ours renamed
    the heading of one, the two meet.)
    """
    grown = list(spans)
    other = diffs[1 - side]
    for lo, hi in spans:
        stretch = _stretch(texts, diffs, firm, side, lo, hi)
        if stretch is None or all(lo <= h[0] and h[1] <= hi for h in _around(other, stretch[0], stretch[1])):
            continue
        reading = _read(texts, diffs, side, stretch, read)
        grown += [_departure(reading, hunks, lo, hi) for hunks in reading.diffs[1:]]
    return _union(grown)


def _read(texts: Sequence[Sequence[str]], diffs: Sequence[List[Hunk]], side: int,
          stretch: Tuple[int, int, int, int], read: dict) -> _Readings:
    """The readings of one side's diff over a stretch, kept in `read`."""
    if (side, stretch) not in read:
        a_lo, a_hi, b_lo, b_hi = stretch
        base, side_text = texts[0], texts[1 + side]
        diff = _inside(base, side_text, _around(diffs[side], a_lo, a_hi), *stretch)
        read[side, stretch] = _Readings(*stretch, _readings(base[a_lo:a_hi], side_text[b_lo:b_hi], diff))
    return read[side, stretch]


def _no_piece_settles(texts: Sequence[Sequence[str]], near: Sequence[List[Hunk]], lo: int, hi: int,
                      edges: Sequence[Tuple[int, int]]) -> bool:
    """Whether the diffs alone settle no piece of the run: then no readings would.

    The diffs alone split the run at least as finely, and settle at least
    as much, as all readings do.  Most often (both sides rewrote one line)
    a quicker test tells: they changed a line differently, and no line
    boundary in the run is free of their hunks.
    """
    ours_hunks, theirs_hunks = ([h for h in hunks if lo <= h[0] and h[1] <= hi] for hunks in near)
    clash = any(g[0] < h[1] and h[0] < g[1] and (g[:2] != h[:2] or texts[1][g[2]:g[3]] != texts[2][h[2]:h[3]])
                for g in ours_hunks for h in theirs_hunks)
    if clash:
        spanned = set()  # the line boundaries inside the run that a hunk spans
        for h in ours_hunks + theirs_hunks:
            spanned.update(range(h[0] + 1, h[1]))
        if len(spanned) == hi - lo - 1:
            return True
    alone = [_Readings(lo, hi, *edges[side], [_inside(texts[0], texts[1 + side], near[side], lo, hi, *edges[side])])
             for side in (OURS, THEIRS)]
    return all(piece.merged is None for piece in _pieces(texts, lo, hi, edges, alone))


def _pieces(texts: Sequence[List[str]], lo: int, hi: int, edges: Sequence[Tuple[int, int]],
            readings: List[_Readings]) -> List[_Piece]:
    """base[lo:hi] split where every reading of both sides allows, each piece settled if they agree."""
    cuts = [(lo, edges[OURS][0], edges[THEIRS][0])]
    for p in range(lo + 1, hi):
        at = []
        for reading in readings:
            positions = {_position(hunks, p - reading.a_lo) for hunks in reading.diffs}
            if len(positions) != 1 or None in positions:
                break
            at.append(reading.b_lo + positions.pop())
        else:
            if not _edits_meet(readings, p):
                cuts.append((p, *at))
    cuts.append((hi, edges[OURS][1], edges[THEIRS][1]))
    pieces = []
    for (p, o_lo, t_lo), (q, o_hi, t_hi) in zip(cuts, cuts[1:]):
        merged = _agreed(texts, p, q, ((o_lo, o_hi), (t_lo, t_hi)), readings)
        pieces.append(_Piece(p, q, texts[1][o_lo:o_hi], texts[2][t_lo:t_hi], merged))
    return pieces


def _position(hunks: List[Hunk], p: int) -> Optional[int]:
    """Where point p of a falls in b (before what is inserted there), or None inside a hunk."""
    shift = 0
    for a_lo, a_hi, b_lo, b_hi in hunks:
        if a_lo >= p:
            break
        if a_hi > p:
            return None
        shift = b_hi - a_hi
    return p + shift


def _edits_meet(readings: List[_Readings], p: int) -> bool:
    """Whether some readings of the two sides edit at base point p in a way that collides:
    both insert there, or one inserts next to where the other removes more lines than it adds."""
    inserts, shrinks = [False, False], [False, False]
    for side, reading in enumerate(readings):
        at = p - reading.a_lo
        for hunks in reading.diffs:
            for h_lo, h_hi, b_lo, b_hi in hunks:
                if h_lo == h_hi == at:
                    inserts[side] = True
                elif at in (h_lo, h_hi) and b_hi - b_lo < h_hi - h_lo:
                    shrinks[side] = True
    return (inserts[OURS] and (inserts[THEIRS] or shrinks[THEIRS])) or (inserts[THEIRS] and shrinks[OURS])


def _agreed(texts: Sequence[List[str]], lo: int, hi: int, edges: Sequence[Tuple[int, int]],
            readings: List[_Readings]) -> Optional[List[str]]:
    """The lines every pair of readings merges base[lo:hi] to: None where a reading maps it
    to other side lines than `edges` says, or where a pair collides, or two pairs differ."""
    base = texts[0]
    windows = []
    for side, (reading, (s_lo, s_hi)) in enumerate(zip(readings, edges)):
        found: List[List[Hunk]] = []
        for hunks in reading.diffs:
            window = _inside(base, texts[1 + side], reading.placed(hunks), lo, hi, s_lo, s_hi)
            if window is None:
                return None
            if window not in found:
                found.append(window)
        windows.append(found)
    (o_lo, o_hi), (t_lo, t_hi) = edges
    if texts[1][o_lo:o_hi] == texts[2][t_lo:t_hi]:
        return texts[1][o_lo:o_hi]
    agreed = None
    for ours_hunks in windows[OURS]:
        for theirs_hunks in windows[THEIRS]:
            merged = _merge_reading(base[lo:hi], texts[1][o_lo:o_hi], texts[2][t_lo:t_hi], ours_hunks, theirs_hunks)
            if merged is None or (agreed is not None and merged != agreed):
                return None
            agreed = merged
    return agreed


def _around(hunks: List[Hunk], lo: int, hi: int) -> List[Hunk]:
    """The ascending hunks that may reach into base[lo:hi]: from the last that starts before lo."""
    return hunks[max(bisect.bisect_left(hunks, (lo,)) - 1, 0):bisect.bisect_right(hunks, (hi, math.inf))]


def _inside(base: Sequence[str], side: Sequence[str], hunks: List[Hunk], lo: int, hi: int,
            s_lo: int, s_hi: int) -> Optional[List[Hunk]]:
    """The hunks that lie in base[lo:hi] and side[s_lo:s_hi], counted from there,
    if they make a diff of the two; None where one crosses an edge."""
    inside = []
    for a_lo, a_hi, b_lo, b_hi in hunks:
        if (a_hi <= lo and b_hi <= s_lo) or (a_lo >= hi and b_lo >= s_hi):
            continue
        if not (lo <= a_lo and a_hi <= hi and s_lo <= b_lo and b_hi <= s_hi):
            return None
        inside.append((a_lo - lo, a_hi - lo, b_lo - s_lo, b_hi - s_lo))
    a, b = base[lo:hi], side[s_lo:s_hi]
    if len(a) - sum(h[1] - h[0] for h in inside) != len(b) - sum(h[3] - h[2] for h in inside):
        return None
    if any(a[i:i + size] != b[j:j + size] for i, j, size in _blocks(inside, len(a), len(b))):
        return None
    return inside


def _merge_reading(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str],
                   ours_hunks: List[Hunk], theirs_hunks: List[Hunk]) -> Optional[List[str]]:
    """The merge when each side's diff is taken as certain; None where they collide."""
    changes = sorted([_Change(h[0], h[1], h, OURS) for h in ours_hunks]
                     + [_Change(h[0], h[1], h, THEIRS) for h in theirs_hunks])
    out: List[str] = []
    done = shift_o = shift_t = 0
    for cluster in _clusters(changes, lambda i: True):  # in a certain diff, every edge is certain
        out += base[done:cluster.lo]
        o_lo, t_lo = cluster.lo + shift_o, cluster.lo + shift_t
        shift_o += cluster.growth[OURS]
        shift_t += cluster.growth[THEIRS]
        mine, yours = ours[o_lo:cluster.hi + shift_o], theirs[t_lo:cluster.hi + shift_t]
        if len(cluster.sides) == 2 and mine != yours:
            return None
        out += mine if OURS in cluster.sides else yours
        done = cluster.hi
    return out + list(base[done:])


def _stretch(texts: Sequence[Sequence[str]], diffs: Sequence[List[Hunk]], firm: _Firmness, side: int,
             lo: int, hi: int) -> Optional[Tuple[int, int, int, int]]:
    """The stretch (a_lo, a_hi, b_lo, b_hi) around base[lo:hi] out to the nearest anchors: lines
    one side's diff pairs that are once in base and once in that side.  None past _SETTLE_LINES."""
    base, side_text, hunks = texts[0], texts[1 + side], diffs[side]
    in_base, in_side = firm.counts[0], firm.counts[1 + side]

    def anchor(i: int) -> Optional[int]:
        if in_base[base[i]] != 1:
            return None  # the usual answer where lines repeat, found first
        k = bisect.bisect_right(hunks, (i, math.inf)) - 1  # the last hunk starting at or before line i
        if k >= 0 and hunks[k][1] > i:
            return None  # inside a hunk
        j = i + (hunks[k][3] - hunks[k][1] if k >= 0 else 0)
        return j if in_side[side_text[j]] == 1 else None

    a_lo, a_hi = lo, hi
    while a_lo and anchor(a_lo - 1) is None and a_hi - a_lo <= _SETTLE_LINES:
        a_lo -= 1
    while a_hi < len(base) and anchor(a_hi) is None and a_hi - a_lo <= _SETTLE_LINES:
        a_hi += 1
    if a_hi - a_lo > _SETTLE_LINES:
        return None
    b_lo = anchor(a_lo - 1) + 1 if a_lo else 0
    b_hi = anchor(a_hi) if a_hi < len(base) else len(side_text)
    return None if b_hi - b_lo > _SETTLE_LINES else (a_lo, a_hi, b_lo, b_hi)


def _readings(a: Sequence[str], b: Sequence[str], diff: List[Hunk]) -> List[List[Hunk]]:
    """Ways a person may have edited a into b: `diff`, and the cheapest edit scripts.

    An edit script here deletes, inserts, or replaces a line with a similar
    one (a ticked box is that box, ticked), each at a cost of one.  The
    cheapest are searched from the front and from the back, with ties going
    to deletions first or to insertions first, and with all lines or with
    text lines first (the blank lines then between them), since blank
    lines tip which of two equal sections a shortest diff removes.
    """
    readings = [diff]
    for text_first in (False, True):
        for backward in (False, True):
            for pairs in _cheapest_pairs(a, b, backward, text_first):
                hunks = _hunks(_coalesce(pairs), len(a), len(b))
                if hunks not in readings:
                    readings.append(hunks)
    return readings


def _cheapest_pairs(a: Sequence[str], b: Sequence[str], backward: bool,
                    text_first: bool) -> List[List[Tuple[int, int]]]:
    """The pairs (i, j) of equal lines of cheapest edit scripts (see `_readings`), ascending:
    with ties going to deletions first, and to insertions first."""
    if not text_first:
        return _cost_pairs(a, b, backward)
    (where_a, text_a), (where_b, text_b) = _text_lines(a), _text_lines(b)
    found = []
    for tie, text_pairs in enumerate(_cost_pairs(text_a, text_b, backward)):
        pairs = []
        i0 = j0 = 0  # where the gap before the next pair of text lines starts
        for i, j in [(where_a[x], where_b[y]) for x, y in text_pairs] + [(len(a), len(b))]:
            pairs += [(i0 + x, j0 + y) for x, y in _cost_pairs(a[i0:i], b[j0:j], backward)[tie]]
            pairs.append((i, j))
            i0, j0 = i + 1, j + 1
        found.append(pairs[:-1])
    return found


def _cost_pairs(a: Sequence[str], b: Sequence[str], backward: bool) -> List[List[Tuple[int, int]]]:
    """`_cheapest_pairs` with all lines: a table of the cheapest costs, then two walks back through it."""
    n, m = len(a), len(b)
    if backward:
        return [[(n - 1 - i, m - 1 - j) for i, j in reversed(pairs)] for pairs in _cost_pairs(a[::-1], b[::-1], False)]
    cost = [list(range(m + 1))]  # cost[i][j]: of editing a[:i] into b[:j]
    for i in range(1, n + 1):
        above, row = cost[-1], [i]
        x = a[i - 1]
        for j in range(1, m + 1):
            best = above[j] + 1
            if row[j - 1] < above[j]:
                best = row[j - 1] + 1
            if x == b[j - 1]:
                if above[j - 1] < best:
                    best = above[j - 1]
            elif above[j - 1] + 1 < best and _similar(x, b[j - 1]):
                best = above[j - 1] + 1
            row.append(best)
        cost.append(row)
    found = []
    for insertions_first in (False, True):
        pairs = []
        i, j = n, m
        while i and j:  # back from the end: pair lines as late as they may be
            here = cost[i][j]
            if a[i - 1] == b[j - 1] and here == cost[i - 1][j - 1]:
                pairs.append((i - 1, j - 1))
                i, j = i - 1, j - 1
            elif a[i - 1] != b[j - 1] and here == cost[i - 1][j - 1] + 1 and _similar(a[i - 1], b[j - 1]):
                i, j = i - 1, j - 1
            elif (insertions_first or here != cost[i][j - 1] + 1) and here == cost[i - 1][j] + 1:
                i -= 1
            else:
                j -= 1
        found.append(pairs[::-1])
    return found


@functools.lru_cache(maxsize=1 << 12)
def _similar(x: str, y: str) -> bool:
    """Whether y reads as x edited in place: the start and end they share make 0.6 of the longer."""
    head = len(os.path.commonprefix((x, y)))
    tail = len(os.path.commonprefix((x[head:][::-1], y[head:][::-1])))
    return head + tail >= 0.6 * max(len(x), len(y))


# ------------------------------------------------------------ two-way diff

_SMALL_GAP = 10_000  # n*m up to which a gap is diffed, not anchored, and its search has no budget
_RESTART_BUDGET = 32  # edits of each search after the first ran out of budget


def _matching_blocks(a: Sequence, b: Sequence, doubts: List[Tuple[int, int]]) -> List[Tuple[int, int, int]]:
    """Equal runs of `a` and `b` as ascending (i, j, size): a[i:i+size] == b[j:j+size].

    Adds to `doubts` the ranges of `a` where another diff, just as short,
    would pair its elements differently.
    """
    size = _run_length(a, b, 0, 0, min(len(a), len(b)))  # the common prefix
    blocks = [(0, 0, size)] if size else []
    # Every gap below starts where a run stopped: at a mismatch, or at the
    # end of one side.  So only its end needs trimming.
    todo = [(size, len(a), size, len(b))]
    while todo:  # a stack, not recursion: no input can exhaust the call stack
        a_lo, a_hi, b_lo, b_hi = todo.pop()
        size = _run_length(a, b, a_hi, b_hi, min(a_hi - a_lo, b_hi - b_lo), backward=True)
        if size:
            a_hi, b_hi = a_hi - size, b_hi - size
            blocks.append((a_hi, b_hi, size))
        if a_lo == a_hi or b_lo == b_hi:
            continue
        if (a_hi - a_lo) * (b_hi - b_lo) <= _SMALL_GAP:
            runs = []
        else:
            count_b = Counter(b[b_lo:b_hi])
            in_turn = _rewritten_in_turn(a, b, a_lo, a_hi, b_lo, b_hi, count_b)
            if in_turn is not None:
                blocks += in_turn
                continue
            runs = _anchored_runs(a, b, a_lo, a_hi, b_lo, b_hi, count_b)
        if not runs:
            blocks += _gap_blocks(a, b, a_lo, a_hi, b_lo, b_hi, doubts)
            continue
        i0, j0 = a_lo, b_lo  # where the gap before the next run starts
        for i, j, size in runs:
            todo.append((i0, i, j0, j))  # never empty: the run before stopped at a mismatch
            blocks.append((i, j, size))
            i0, j0 = i + size, j + size
        todo.append((i0, a_hi, j0, b_hi))
    blocks.sort()
    return blocks


def _run_length(a: Sequence, b: Sequence, i: int, j: int, limit: int, backward: bool = False) -> int:
    """How many elements match from a[i] and b[j] on (or before them, backward).

    Compares slices of doubling then halving size, so a long run costs a
    few C-level slice compares instead of one Python step per element.
    """
    if limit <= 0 or (a[i - 1] != b[j - 1] if backward else a[i] != b[j]):
        return 0  # the usual answer at the edge of a gap, without building `same`

    def same(k: int, step: int) -> bool:
        if backward:
            return a[i - k - step:i - k] == b[j - k - step:j - k]
        return a[i + k:i + k + step] == b[j + k:j + k + step]

    k, step = 1, 1  # the first element matched above
    while step <= limit - k and same(k, step):
        k += step
        step *= 2
    while step > 1:  # the first mismatch lies in the next `step` elements
        step //= 2
        if step <= limit - k and same(k, step):
            k += step
    return k


def _rewritten_in_turn(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int,
                       count_b: Counter) -> Optional[List[Tuple[int, int, int]]]:
    """The matching blocks of a rewritten gap whose elements found on both
    sides come in turn (`_in_turn`); None if not so.

    A rewrite leaves most elements on one side only, and the walk of
    `_anchored_runs` would take a Python step for each; a sample of a,
    against `count_b` (the counts of b's range), tells whether it is one.
    """
    sample = a[a_lo:a_hi:16]
    if 4 * sum(x not in count_b for x in sample) < len(sample):
        return None
    where_a = _places(a, a_lo, a_hi, count_b)
    # b's elements found in a are those of a found in b: a needs no counts.
    return _in_turn(a, b, where_a, _places(b, b_lo, b_hi, set(map(a.__getitem__, where_a))))


def _anchored_runs(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int,
                   count_b: Counter) -> List[Tuple[int, int, int]]:
    """Runs of equal elements, (i, j, size) each, that start at patience anchors.

    The anchors are the elements occurring once in a[a_lo:a_hi] and once in
    b[b_lo:b_hi] (`count_b` counts those), in the longest chain ascending
    in both sequences: the safest places to align them.  Usually none of
    them moved, the chain is all of them, and `_walk_runs` finds that out
    without listing them.
    """
    count_a = Counter(a[a_lo:a_hi])
    runs = _walk_runs(a, b, a_lo, a_hi, b_lo, b_hi, count_a, count_b)
    if runs is None:  # some moved: keep only the longest ascending chain
        unique = {x for x, n in count_a.items() if n == 1 and count_b.get(x) == 1}
        runs = _chain_runs(a, b, a_hi, b_hi, _longest_chain(a, b, a_lo, a_hi, b_lo, b_hi, unique))
    return runs


def _walk_runs(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int,
               count_a: dict, count_b: dict) -> Optional[List[Tuple[int, int, int]]]:
    """Walk `a`, extending each anchor met into a run of equal elements.

    An anchor is an element counted once in both `count_a` and `count_b`
    (the counts of the two ranges).  Each must lie ahead in `b` of the run
    before it; if one lies behind (it moved), returns None.  Anchors met
    inside a run need no work: being unique, they are matched there already.
    """
    runs = []
    i, j = a_lo, b_lo
    while i < a_hi:
        x = a[i]
        if count_b.get(x) != 1 or count_a.get(x) != 1:
            i += 1
            continue
        try:
            j = b.index(x, j, b_hi)
        except ValueError:
            return None
        size = _run_length(a, b, i, j, min(a_hi - i, b_hi - j))
        runs.append((i, j, size))
        i, j = i + size, j + size
    return runs


def _longest_chain(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int,
                   unique: set) -> List[Tuple[int, int]]:
    """Of the `unique` elements, the (i, j) places of the longest chain ascending in both a and b."""
    where_b = dict(zip(b[b_lo:b_hi], range(b_lo, b_hi)))  # right for the unique ones
    places = [(i, where_b[x]) for i, x in enumerate(a[a_lo:a_hi], a_lo) if x in unique]  # in a's order
    tails: List[int] = []  # tails[n]: smallest j ending an ascending chain of n+1 elements
    ends: List[int] = []  # index in places of that chain's last element
    before: List[int] = []  # per element: index in places of the one before it in its chain
    for index, (_, j) in enumerate(places):
        n = bisect.bisect_left(tails, j)
        if n == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[n], ends[n] = j, index
        before.append(ends[n - 1] if n else -1)
    chain = []
    index = ends[-1]
    while index >= 0:
        chain.append(places[index])
        index = before[index]
    return chain[::-1]


def _chain_runs(a: Sequence, b: Sequence, a_hi: int, b_hi: int,
                chain: List[Tuple[int, int]]) -> List[Tuple[int, int, int]]:
    """Each (i, j) of an ascending chain of unique elements extended into a run of equal elements.

    A chain element inside the run before it is matched there already.
    """
    runs: List[Tuple[int, int, int]] = []
    end = 0  # where the run before ends in a
    for i, j in chain:
        if i < end:
            continue
        size = _run_length(a, b, i, j, min(a_hi - i, b_hi - j))
        runs.append((i, j, size))
        end = i + size
    return runs


def _gap_blocks(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int,
                doubts: List[Tuple[int, int]]) -> List[Tuple[int, int, int]]:
    """Matching blocks of a gap that is small or has no element unique on both sides.

    Its elements repeat, so a shortest diff may pair them in several ways:
    it is searched from the front and from the back, and where the two
    disagree, the range goes to `doubts`.
    """
    gap_a, gap_b = a[a_lo:a_hi], b[b_lo:b_hi]
    in_a, in_b = set(gap_a), set(gap_b)
    if in_a.isdisjoint(in_b):  # e.g. both sides of a conflict rewrote every line
        return []
    if in_a != in_b:
        # An element found on one side only can never match: diffing the
        # rest gives the same matches, from sequences often far shorter
        # (a rewritten paragraph leaves just its blank lines).
        where_a, where_b = _places(a, a_lo, a_hi, in_b), _places(b, b_lo, b_hi, in_a)
        in_turn = _in_turn(a, b, where_a, where_b)
        if in_turn is not None:  # e.g. a rewritten section whose blank lines stayed put
            return in_turn
        kept_a, kept_b = [a[i] for i in where_a], [b[j] for j in where_b]
        kept_doubts: List[Tuple[int, int]] = []
        blocks = _gap_blocks(kept_a, kept_b, 0, len(kept_a), 0, len(kept_b), kept_doubts)
        # Compaction hides a kept hunk that can slide, yet past the dropped
        # elements a slide is a different diff, just as short.
        kept_doubts += _slides(kept_a, kept_b, _compact(kept_a, kept_b, _hunks(blocks, len(kept_a), len(kept_b))))
        where_a.append(a_hi)  # a doubt is as wide as the dropped elements around it allow
        doubts += [(where_a[lo - 1] + 1 if lo else a_lo, where_a[hi]) for lo, hi in kept_doubts]
        return _coalesce((where_a[i + t], where_b[j + t]) for i, j, size in blocks for t in range(size))
    n, m = len(gap_a), len(gap_b)
    windows: List[Tuple[int, int]] = []
    forward = sorted(_myers_blocks(gap_a, gap_b, 0, n, 0, m, windows))
    if windows:  # past the budget no diff is shortest: each search's window is in doubt
        spans = windows
    else:
        backward = _backward_blocks(gap_a, gap_b)
        spans = _disagreements(_compacted(gap_a, gap_b, forward), _compacted(gap_a, gap_b, backward), n, m)
    doubts += [(a_lo + lo, a_lo + hi) for lo, hi in spans]
    return [(a_lo + i, b_lo + j, size) for i, j, size in forward]


def _places(seq: Sequence, lo: int, hi: int, other) -> List[int]:
    """Where in seq[lo:hi] the elements found in `other` (a set or counts) are."""
    return list(compress(count(lo), map(other.__contains__, seq[lo:hi])))  # at C speed


def _in_turn(a: Sequence, b: Sequence, where_a: List[int],
             where_b: List[int]) -> Optional[List[Tuple[int, int, int]]]:
    """The matching blocks if the elements of a at `where_a`, the only ones
    that can match, are those of b at `where_b` in turn; else None.

    The longest matching then pairs them in turn, and no other is as long.
    """
    if [a[i] for i in where_a] != [b[j] for j in where_b]:
        return None
    return _coalesce(zip(where_a, where_b))


def _blocks(hunks: List[Hunk], n: int, m: int) -> List[Tuple[int, int, int]]:
    """The matching blocks between ascending hunks of an n-element a and an m-element b."""
    blocks = []
    i = j = 0
    for a_lo, a_hi, b_lo, b_hi in hunks + [(n, n, m, m)]:
        if a_lo > i:
            blocks.append((i, j, a_lo - i))
        i, j = a_hi, b_hi
    return blocks


def _backward_blocks(a: Sequence, b: Sequence) -> List[Tuple[int, int, int]]:
    """Matching blocks, ascending, of a shortest edit script searched from the ends of a and b."""
    n, m = len(a), len(b)
    return [(n - i - size, m - j - size, size)
            for i, j, size in sorted(_myers_blocks(a[::-1], b[::-1], 0, n, 0, m), reverse=True)]


def _compacted(a: Sequence, b: Sequence, blocks: List[Tuple[int, int, int]]) -> List[Tuple[int, int, int]]:
    """The matching blocks of a diff once its hunks are compacted."""
    return _blocks(_compact(a, b, _hunks(blocks, len(a), len(b))), len(a), len(b))


def _disagreements(first: List[Tuple[int, int, int]], second: List[Tuple[int, int, int]],
                   n: int, m: int) -> List[Tuple[int, int]]:
    """The ranges of a (of n elements; b has m) between the pairs two diffs share,
    where either diff pairs something else."""
    if first == second:
        return []
    agreed = [(0, 0, 0)]
    p = q = 0
    while p < len(first) and q < len(second):
        (i1, j1, s1), (i2, j2, s2) = first[p], second[q]
        lo, hi = max(i1, i2), min(i1 + s1, i2 + s2)
        if i1 - j1 == i2 - j2 and lo < hi:
            agreed.append((lo, lo - i1 + j1, hi - lo))
        if i1 + s1 < i2 + s2:
            p += 1
        else:
            q += 1
    agreed.append((n, m, 0))
    starts = [[i for i, _, _ in blocks] for blocks in (first, second)]
    spans = []
    for (i, _, size), (next_i, _, _) in zip(agreed, agreed[1:]):
        lo = i + size
        for blocks, begins in zip((first, second), starts):
            # The list's last block starting before next_i is the one that
            # would reach into a[lo:next_i]: its blocks do not overlap.
            k = bisect.bisect_left(begins, next_i) - 1
            if k >= 0 and blocks[k][0] + blocks[k][2] > lo:
                spans.append((lo, next_i))
                break
    return spans


def _coalesce(pairs) -> List[Tuple[int, int, int]]:
    """Ascending matched pairs (i, j) as blocks (i, j, size) of consecutive pairs."""
    blocks = []
    i0 = j0 = size = 0
    for i, j in pairs:
        if size and i == i0 + size and j == j0 + size:
            size += 1
            continue
        if size:
            blocks.append((i0, j0, size))
        i0, j0, size = i, j, 1
    if size:
        blocks.append((i0, j0, size))
    return blocks


def _edit_budget(n: int, m: int) -> int:
    """How many edits one Myers search may try on an n-by-m gap.

    A small gap gets all it may need, so its diff is minimal.  Beyond that
    the search costs about budget squared steps in Python plus budget
    times length in C slice compares: a budget near sqrt(length) keeps
    the Python steps linear in the length, while the slice compares grow
    as length times sqrt(length), at C speed.
    """
    if n * m <= _SMALL_GAP:
        return n + m
    return 100 + math.isqrt(4 * (n + m))


def _myers_blocks(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int,
                  windows: Optional[List[Tuple[int, int]]] = None):
    """Matching blocks of a shortest edit script (Myers 1986, greedy forward).

    When a search runs out of its edit budget, the path to the point it got
    furthest to is kept and a new search starts from there (xdiff splits at
    its best diagonal the same way): the diff is then no longer minimal,
    but every block of it stays local.  The range of `a` each such search
    covered goes to `windows`: inside one, the pairing is a guess.
    """
    blocks: List[Tuple[int, int, int]] = []
    budget = _edit_budget(a_hi - a_lo, b_hi - b_lo)
    covered: List[Tuple[int, int]] = []
    while True:
        reached, trace, x, y = _myers_search(a, b, a_lo, a_hi, b_lo, b_hi, budget)
        blocks += _trace_back(trace, x, y, a_lo, b_lo)
        covered.append((a_lo, a_lo + x))
        if reached:
            if windows is not None and len(covered) > 1:
                windows += covered
            return blocks
        a_lo, b_lo = a_lo + x, b_lo + y
        budget = _RESTART_BUDGET  # the gap is dense: short searches keep it local, and cheap


def _myers_search(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int, budget: int):
    """Search a shortest edit path through a[a_lo:a_hi] and b[b_lo:b_hi].

    `reach[k]` is the furthest x reached on diagonal k = x - y with d
    edits; a snapshot per d lets the path be traced back.  Returns whether
    the end was reached, the snapshots before the last step, and the end
    or, past `budget` edits, the point furthest along (x + y).
    """
    n, m = a_hi - a_lo, b_hi - b_lo
    reach = {1: 0}
    trace = []
    for d in range(budget + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and reach[k - 1] < reach[k + 1]):
                x = reach[k + 1]
            else:
                x = reach[k - 1] + 1
            y = x - k
            if x < n and y < m and a[a_lo + x] == b[b_lo + y]:
                x += _run_length(a, b, a_lo + x, b_lo + y, min(n - x, m - y))
            reach[k] = x
            if x >= n and x - k >= m:
                return True, trace, x, x - k
        trace.append(array.array("q", (reach[k] for k in range(-d, d + 1, 2))))
    trace.pop()  # the last snapshot is where the path ends, not one before it
    x, k = max((reach[k] * 2 - k, k) for k in range(-d, d + 1, 2) if reach[k] <= n and reach[k] - k <= m)
    return False, trace, (x + k) // 2, (x - k) // 2


def _trace_back(trace: List[array.array], x: int, y: int, a_lo: int, b_lo: int):
    """Walk a Myers search back from (x, y), collecting its diagonal runs."""
    blocks = []
    for d in range(len(trace), 0, -1):
        previous = trace[d - 1]  # reach after d - 1 edits on diagonals 1-d, 3-d, ..., d-1
        k = x - y
        index = (k + d) // 2  # of diagonal k + 1 in previous
        if k == -d or (k != d and previous[index - 1] < previous[index]):
            k_before, x_before = k + 1, previous[index]
            start = x_before  # the edit was a step down: x stays
        else:
            k_before, x_before = k - 1, previous[index - 1]
            start = x_before + 1  # the edit was a step right
        if x > start:
            blocks.append((a_lo + start, b_lo + start - k, x - start))
        x, y = x_before, x_before - k_before
    if x:
        blocks.append((a_lo, b_lo, x))
    return blocks


# --------------------------------------------------------------------- CLI

def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python -m diff3 OURS BASE THEIRS`: print the merge; exit 0 clean, 1 conflicts, 2 trouble."""
    parser = argparse.ArgumentParser(
        prog="mark-diff3",
        description="Three-way merge of text files, written to stdout with git-style conflict markers.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("ours")
    parser.add_argument("base")
    parser.add_argument("theirs")
    parser.add_argument("--diff3", action="store_true", help="also show the base lines in conflicts")
    parser.add_argument(
        "-L", dest="labels", action="append", default=[], metavar="LABEL",
        help="label for ours, then base, then theirs (default: the file names)",
    )
    args = parser.parse_args(argv)
    paths = (args.ours, args.base, args.theirs)
    if len(args.labels) > 3:
        parser.error("-L may be given at most three times")
    texts = []
    for path in paths:
        try:
            with open(path, "rb") as file:
                texts.append(file.read().decode("utf-8"))
        except OSError as error:
            print(f"mark-diff3: {path}: {error.strerror}", file=sys.stderr)
            return 2
        except UnicodeDecodeError as error:
            print(f"mark-diff3: {path}: not UTF-8 (byte {error.start})", file=sys.stderr)
            return 2
    labels = tuple(args.labels) + paths[len(args.labels):]
    style = "diff3" if args.diff3 else "merge"
    merged, had_conflict = diff3(texts[1], texts[0], texts[2], style=style, labels=labels)
    sys.stdout.buffer.write(merged.encode("utf-8"))
    sys.stdout.flush()
    return 1 if had_conflict else 0


if __name__ == "__main__":
    sys.exit(main())
