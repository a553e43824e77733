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
* changed by both, differently: a conflict block
      <<<<<<< ours
      ours' lines
      ||||||| base          (only with style="diff3")
      base lines
      =======
      theirs' lines
      >>>>>>> theirs
  and `had_conflict` is True.

Two hunks of different sides "collide" (and must be decided together) when
their base ranges overlap, when both insert at the same point, or when one
inserts strictly inside the range the other replaces.  Hunks that merely
touch do not collide: ours changing line 5 and theirs changing line 6 is a
clean merge.  git merge-file and GNU diff3 report a conflict there; this
module deliberately does not, because each side's change is unambiguous.
In the same spirit, one side adding a section while the other deletes a
different section merges cleanly: the deletion and the addition are two
separate hunks.  A deletion that overlaps the other side's modification is
a conflict, so no edit is ever dropped silently.

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
   meets a moved line computes the chain;
3. a small gap, or one without such lines, first drops the lines found
   on one side only (they can never match; a rewritten paragraph leaves
   just its blank lines), then is diffed by `difflib.SequenceMatcher` when
   it is small, otherwise by Myers' O(ND) shortest-edit search; runs of
   equal lines are always measured by comparing list slices, at C speed;
4. when that search would exceed an edit-distance budget (a gap where nearly
   everything changed), the gap is taken as one replaced block: coarser,
   never wrong.

`python bench.py diff3` measures all this against `git merge-file`.
"""

import argparse
import array
import bisect
import difflib
import math
import sys
from collections import Counter
from typing import Iterator, List, NamedTuple, Optional, Sequence, Tuple

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
    theirs) words written after the markers.  Never raises for str inputs.
    """
    for name, value in (("base", base), ("ours", ours), ("theirs", theirs)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be str, not {type(value).__name__}")
    if style not in ("merge", "diff3"):
        raise ValueError(f'style must be "merge" or "diff3", not {style!r}')
    _check_labels(labels)

    texts = [split_lines(base), split_lines(ours), split_lines(theirs)]
    eol = _line_ending(texts)
    start, middle, separator, end = (
        marker + eol
        for marker in ("<<<<<<< " + labels[0], "||||||| " + labels[1], "=======", ">>>>>>> " + labels[2])
    )
    out, had_conflict = _merge_lines(*texts, (start, middle if style == "diff3" else None, separator, end))
    # Only a document's last line can lack a newline; if none does, plain join.
    ended = all(lines[-1].endswith("\n") for lines in texts if lines)
    return Merge("".join(out) if ended else join_lines(out, eol), had_conflict)


def get_hunks(a: Sequence, b: Sequence) -> List[Hunk]:
    """The places where `b` differs from `a`: (a_lo, a_hi, b_lo, b_hi) each.

    a[a_lo:a_hi] became b[b_lo:b_hi].  Hunks are ascending and separated
    by at least one equal element.
    """
    hunks = []
    i = j = 0
    for ai, bj, size in _matching_blocks(a, b) + [(len(a), len(b), 0)]:
        if i < ai or j < bj:
            hunks.append((i, ai, j, bj))
        i, j = ai + size, bj + size
    return hunks


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


def _merge_lines(base: Sequence[str], ours: Sequence[str], theirs: Sequence[str],
                 markers: Sequence[Optional[str]]) -> Tuple[List[str], bool]:
    """Merge three line lists; returns the merged lines and whether any conflicted.

    `markers` are the four marker lines (start, base, separator, end) that
    frame a conflict block; with a base marker of None the block leaves the
    base lines out.
    """
    start, middle, separator, end = markers
    tagged = sorted([(h, 0) for h in get_hunks(base, ours)] + [(h, 1) for h in get_hunks(base, theirs)])
    out: List[str] = []
    had_conflict = False
    # How many lines ours and theirs have gained so far: added to a base
    # position outside that side's hunks, it gives the position in that side.
    shift_o = shift_t = 0
    # Wherever theirs changed nothing, ours holds the merge: such stretches
    # are copied from ours in one slice, up to the next place theirs changed.
    copied = 0  # ours[:copied] is in `out` already, or was replaced there
    for lo, hi, sides, growth_o, growth_t in _clusters(tagged):
        o_lo, t_lo = lo + shift_o, lo + shift_t
        shift_o += growth_o
        shift_t += growth_t
        o_hi, t_hi = hi + shift_o, hi + shift_t
        if sides == "ours" or (sides == "both" and ours[o_lo:o_hi] == theirs[t_lo:t_hi]):
            continue
        out += ours[copied:o_lo]
        copied = o_hi
        if sides == "theirs":
            out += theirs[t_lo:t_hi]
            continue
        had_conflict = True
        out += [start, *ours[o_lo:o_hi]]
        if middle:
            out += [middle, *base[lo:hi]]
        out += [separator, *theirs[t_lo:t_hi], end]
    out += ours[copied:]
    return out, had_conflict


_SIDES = (None, "ours", "theirs", "both")  # by bit mask: 1 ours, 2 theirs


def _clusters(tagged: List[Tuple[Hunk, int]]) -> Iterator[Tuple[int, int, str, int, int]]:
    """Group (hunk, side) pairs, sorted by base range, into colliding runs.

    Yields each group as (lo, hi, sides, growth_ours, growth_theirs): the
    base range it covers, "ours", "theirs" or "both" for the sides (0 ours,
    1 theirs) with hunks in it, and how many lines each side gained there.
    A hunk joins the current group when it collides with the group's last
    hunk of the other side; hunks of one side never touch each other, so no
    earlier hunk could collide with it.
    """
    mask = lo = hi = 0
    growth = [0, 0]
    last: List[Optional[Hunk]] = [None, None]
    for hunk, side in tagged:
        a_lo, a_hi, b_lo, b_hi = hunk
        other = last[1 - side]
        if not (other and _collide(hunk, other)):
            if mask:
                yield lo, hi, _SIDES[mask], growth[0], growth[1]
            mask, lo, hi, growth, last = 0, a_lo, a_hi, [0, 0], [None, None]
        elif a_hi > hi:
            hi = a_hi
        mask |= 1 << side
        growth[side] += (b_hi - b_lo) - (a_hi - a_lo)
        last[side] = hunk
    if mask:
        yield lo, hi, _SIDES[mask], growth[0], growth[1]


def _collide(h: Hunk, g: Hunk) -> bool:
    """Whether two hunks of different sides touch the same base lines.

    They do when their base ranges overlap, when both insert at the same
    point, or when one inserts strictly inside the range the other replaces.
    Hunks that only meet at a boundary do not collide.
    """
    (h_lo, h_hi), (g_lo, g_hi) = h[:2], g[:2]
    if h_lo == h_hi and g_lo == g_hi:
        return h_lo == g_lo
    return max(h_lo, g_lo) < min(h_hi, g_hi) or h_lo < g_lo < h_hi or g_lo < h_lo < g_hi


# ------------------------------------------------------------ two-way diff

_SMALL_GAP = 10_000  # n*m up to which the quadratic SequenceMatcher runs on a gap


def _matching_blocks(a: Sequence, b: Sequence) -> List[Tuple[int, int, int]]:
    """Equal runs of `a` and `b` as ascending (i, j, size): a[i:i+size] == b[j:j+size]."""
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
        small = (a_hi - a_lo) * (b_hi - b_lo) <= _SMALL_GAP
        runs = [] if small else _anchored_runs(a, b, a_lo, a_hi, b_lo, b_hi)
        if not runs:
            blocks += _gap_blocks(a, b, a_lo, a_hi, b_lo, b_hi)
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


def _anchored_runs(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int,
                   b_hi: int) -> List[Tuple[int, int, int]]:
    """Runs of equal elements, (i, j, size) each, that start at patience anchors.

    The anchors are the elements occurring once in a[a_lo:a_hi] and once in
    b[b_lo:b_hi], in the longest chain ascending in both sequences: the
    safest places to align them.  Usually none of them moved, the chain is
    all of them, and `_walk_runs` finds that out without listing them.
    """
    count_a, count_b = Counter(a[a_lo:a_hi]), Counter(b[b_lo:b_hi])
    runs = _walk_runs(a, b, a_lo, a_hi, b_lo, b_hi, count_a, count_b)
    if runs is None:  # some moved: keep only the longest ascending chain
        unique = {x for x, n in count_a.items() if n == 1 and count_b.get(x) == 1}
        chain = dict.fromkeys(_longest_chain(a, b, a_lo, a_hi, b_lo, b_hi, unique), 1)
        runs = _walk_runs(a, b, a_lo, a_hi, b_lo, b_hi, chain, chain)
    return runs


def _walk_runs(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int,
               count_a: dict, count_b: dict) -> Optional[List[Tuple[int, int, int]]]:
    """Walk `a`, extending each anchor met into a run of equal elements.

    An anchor is an element counted once in both `count_a` and `count_b`.
    Each must lie ahead in `b` of the run before it; if one lies behind (it
    moved), returns None.  Anchors met inside a run need no work: being
    unique, they are matched there already.
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
                   unique: set) -> set:
    """Of the `unique` elements, those in the longest chain ascending in both a and b."""
    where_b = dict(zip(b[b_lo:b_hi], range(b_lo, b_hi)))  # right for the unique ones
    js = [where_b[x] for x in a[a_lo:a_hi] if x in unique]  # b positions, in a's order
    tails: List[int] = []  # tails[n]: smallest j ending an ascending chain of n+1 elements
    ends: List[int] = []  # index in js of that chain's last element
    before: List[int] = []  # per element: index in js of the one before it in its chain
    for index, j in enumerate(js):
        n = bisect.bisect_left(tails, j)
        if n == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[n], ends[n] = j, index
        before.append(ends[n - 1] if n else -1)
    chain = set()
    index = ends[-1]
    while index >= 0:
        chain.add(b[js[index]])
        index = before[index]
    return chain


def _gap_blocks(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int):
    """Matching blocks of a gap that is small or has no element unique on both sides."""
    gap_a, gap_b = a[a_lo:a_hi], b[b_lo:b_hi]
    in_a, in_b = set(gap_a), set(gap_b)
    if in_a != in_b:
        # An element found on one side only can never match: diffing the
        # rest gives the same matches, from sequences often far shorter
        # (a rewritten paragraph leaves just its blank lines).
        common = in_a & in_b
        where_a = [i for i, x in enumerate(gap_a, a_lo) if x in common]
        where_b = [j for j, x in enumerate(gap_b, b_lo) if x in common]
        kept_a, kept_b = [a[i] for i in where_a], [b[j] for j in where_b]
        if kept_a == kept_b:  # e.g. a rewritten section whose blank lines stayed put
            return _coalesce(zip(where_a, where_b))
        blocks = _gap_blocks(kept_a, kept_b, 0, len(kept_a), 0, len(kept_b))
        return _coalesce((where_a[i + t], where_b[j + t]) for i, j, size in blocks for t in range(size))
    if (a_hi - a_lo) * (b_hi - b_lo) <= _SMALL_GAP:
        matcher = difflib.SequenceMatcher(None, gap_a, gap_b, autojunk=False)
        return [(a_lo + i, b_lo + j, size) for i, j, size in matcher.get_matching_blocks() if size]
    return _myers_blocks(a, b, a_lo, a_hi, b_lo, b_hi)


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


def _edit_budget(length: int) -> int:
    """How many edits Myers' search may try on a gap of `length` elements.

    Its time grows with the square of the edits (in Python) plus length
    times edits (in C), so a budget near sqrt(length) keeps it linear.
    """
    return 100 + math.isqrt(4 * length)


def _myers_blocks(a: Sequence, b: Sequence, a_lo: int, a_hi: int, b_lo: int, b_hi: int):
    """Matching blocks of a shortest edit script (Myers 1986, greedy forward).

    `reach[k]` is the furthest x reached on diagonal k = x - y with d
    edits; a snapshot per d lets the path be traced back.  Past the edit
    budget the gap is returned as having no match: one replaced block.
    """
    n, m = a_hi - a_lo, b_hi - b_lo
    budget = _edit_budget(n + m)
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
                return _trace_back(trace, n, m, a_lo, b_lo)
        trace.append(array.array("q", (reach[k] for k in range(-d, d + 1, 2))))
    return []


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
