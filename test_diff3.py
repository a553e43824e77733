import functools
import gc
import os
import random
import re
from collections import Counter
import subprocess
import sys

import pytest

import diff3 as diff3_module
from diff3 import Merge, diff3, explain, get_hunks, main, split_lines, trace
from testkit import SHAPES, generate

START = "<<<<<<< ours\n"  # the marker lines of a conflict block
SEPARATOR = "=======\n"
END = ">>>>>>> theirs\n"

# name, base, ours, theirs, merged, had_conflict
CASES = [
    ("ours only", "a\nb\nc\n", "a\nB\nc\n", "a\nb\nc\n", "a\nB\nc\n", False),
    ("theirs only", "a\nb\nc\n", "a\nb\nc\n", "a\nb\nC\n", "a\nb\nC\n", False),
    ("same change once", "a\nb\nc\n", "a\nX\nc\n", "a\nX\nc\n", "a\nX\nc\n", False),
    ("different change", "a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n", f"a\n{START}X\n{SEPARATOR}Y\n{END}c\n", True),
    ("disjoint paragraphs",
     "# T\n\nOne.\n\nTwo.\n\nThree.\n", "# T\n\nOne!\n\nTwo.\n\nThree.\n", "# T\n\nOne.\n\nTwo.\n\nThree!\n",
     "# T\n\nOne!\n\nTwo.\n\nThree!\n", False),
    ("adjacent lines", "1\n2\n3\n4\n", "1\nA\n3\n4\n", "1\n2\nB\n4\n", "1\nA\nB\n4\n", False),
    ("same-point inserts differ", "a\nb\n", "a\nX\nb\n", "a\nY\nb\n", f"a\n{START}X\n{SEPARATOR}Y\n{END}b\n", True),
    ("same-point inserts equal", "a\nb\n", "a\nX\nb\n", "a\nX\nb\n", "a\nX\nb\n", False),
    ("delete vs modify", "a\nb\nc\n", "a\nc\n", "a\nB\nc\n", f"a\n{START}{SEPARATOR}B\n{END}c\n", True),
    ("modify vs delete", "a\nb\nc\n", "a\nB\nc\n", "a\nc\n", f"a\n{START}B\n{SEPARATOR}{END}c\n", True),
    ("insert inside other's range", "a\nb\nc\nd\n", "a\nb\nX\nc\nd\n", "a\nB\nC\nd\n",
     f"a\n{START}b\nX\nc\n{SEPARATOR}B\nC\n{END}d\n", True),
    ("add section, delete another",
     "# A\n\naaa\n\n# B\n\nbbb\n", "# A\n\naaa\n\n# B\n\nbbb\n\n# C\n\nccc\n", "# B\n\nbbb\n",
     "# B\n\nbbb\n\n# C\n\nccc\n", False),
    ("insert at start of other's change", "a\nb\n", "X\na\nb\n", "A\nb\n", "X\nA\nb\n", False),
    ("empty base", "", "x\n", "y\n", f"{START}x\n{SEPARATOR}y\n{END}", True),
    ("empty base, one side", "", "x\n", "", "x\n", False),
    ("empty ours", "a\nb\n", "", "a\nb\n", "", False),
    ("empty theirs vs edit", "a\nb\n", "a\nB\n", "", f"{START}a\nB\n{SEPARATOR}{END}", True),
    ("all empty", "", "", "", "", False),
    ("no newline kept", "a\nb", "A\nb", "a\nb", "A\nb", False),
    ("no newline both sides", "a\nb", "A\nb", "a\nB", "A\nB", False),
    # A conflict until issue 37 (an insertion at the file's edge met a removal beside it);
    # since, text inserted beside a line the other side removed keeps its place at the
    # end too, as it does anywhere else ("one\ntwo\nthree" in diff3's docstring).
    ("delete vs append after it", "a\nb\nc\n", "a\nb", "a\nb\nc\nd\n", "a\nb\nd\n", False),
    ("no newline before marker", "a\n", "a\nX", "a\nY\n", f"a\n{START}X\n{SEPARATOR}Y\n{END}", True),
    ("no newline on both conflicting", "a", "x", "y", f"{START}x\n{SEPARATOR}y\n{END}", True),
    ("crlf unchanged regions", "a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n", "a\r\nb\r\nC\r\n", "a\r\nB\r\nC\r\n", False),
    ("crlf markers", "a\r\nb\r\n", "a\r\nX\r\n", "a\r\nY\r\n",
     "a\r\n<<<<<<< ours\r\nX\r\n=======\r\nY\r\n>>>>>>> theirs\r\n", True),
    ("crlf without final newline", "a\r\nb", "a\r\nX", "a\r\nY",
     "a\r\n<<<<<<< ours\r\nX\r\n=======\r\nY\r\n>>>>>>> theirs\r\n", True),
    ("only \\n splits", "a\rb\x0bc\x0cd\x1ce\x85f\u2028g\u2029h\n", "a\rb\x0bc\x0cd\x1ce\x85f\u2028g\u2029h\nnew\n",
     "a\rb\x0bc\x0cd\x1ce\x85f\u2028g\u2029h\n", "a\rb\x0bc\x0cd\x1ce\x85f\u2028g\u2029h\nnew\n", False),
    ("separators are not line breaks", "x\u2028y\n", "X\u2028y\n", "x\u2028Y\n",
     f"{START}X\u2028y\n{SEPARATOR}x\u2028Y\n{END}", True),
    ("separator in a last line, both sides", "a\nb\u2028c", "A\nb\u2028c", "a\nb\u2028C", "A\nb\u2028C", False),
    ("each side deletes the other's line", "a\nb", "b", "a\n", "", False),
    ("separator in a last line without newline", "a\nb\u2028c", "A\nb\u2028c", "a\nb\u2028c", "A\nb\u2028c", False),
    ("setext heading is not a conflict", "Title\n=======\n\ntext\n", "Title\n=======\n\ntext!\n",
     "Title!\n=======\n\ntext\n", "Title!\n=======\n\ntext!\n", False),
    ("marker-like lines are not a conflict", "<<<<<<< x\n>>>>>>> y\n", "<<<<<<< x\n>>>>>>> y\nz\n",
     "<<<<<<< X\n>>>>>>> y\n", "<<<<<<< X\n>>>>>>> y\nz\n", False),
    # Found by fuzzing (issue 32): both remove one of two equal "a" lines, which
    # could be either, and theirs inserts before the first: a conflict whichever
    # side is ours (it once merged cleanly one way round only).
    ("insertion beside a removal both made", "a\nb\na\nb\n", "a\nb\nb\n", "x\na\nb\nb\n",
     f"{START}{SEPARATOR}x\n{END}a\nb\nb\n", True),
    ("moved line", "a\nb\nc\nd\ne\n", "d\na\nb\nc\ne\n", "a\nb\nc\nd\nE\n", "d\na\nb\nc\nE\n", False),
    # Clean before issue 25, conflicts since: theirs' tick may be of either call box,
    # so whether the task lands before the ticked box is not certain.  (Since issue
    # 37 the two readings pair theirs' boxes differently: the stretch in doubt is the
    # whole text, and the lines both sides share in it stay outside the markers.)
    ("tick next to an insertion among equal boxes", "- [ ] todo\n- [ ] call\n- [ ] call\n",
     "- [ ] todo\n- [ ] call\n- [ ] task\n- [ ] call\n", "- [x] todo\n- [ ] call\n- [x] call\n",
     f"{START}- [ ] todo\n{SEPARATOR}- [x] todo\n{END}- [ ] call\n{START}- [ ] task\n- [ ] call\n{SEPARATOR}"
     f"- [x] call\n{END}", True),
    # The new todo may sit before or after the ticked one, and theirs' tick beside it
    # is in the same doubt: one group, the lines both sides share in it outside the
    # markers.  Theirs' tick of the first box, which no change of ours touches, merges.
    ("new box among equal ticked boxes", "- [ ] call\n\n- [ ] todo\n\n- [ ] todo\n\n- [ ] call\n",
     "- [ ] call\n\n- [ ] todo\n\n- [ ] todo\n\n- [ ] todo\n\n- [ ] task\n\n- [ ] call\n",
     "- [x] call\n\n- [x] todo\n\n- [ ] todo\n\n- [ ] call\n",
     f"- [x] call\n\n{START}- [ ] todo\n{SEPARATOR}- [x] todo\n{END}\n- [ ] todo\n\n{START}- [ ] todo\n\n"
     f"- [ ] task\n\n{SEPARATOR}{END}- [ ] call\n", True),
    # Issue 41: conflicts before, as two blocks around "- [x] t"; git merges them.  Each tick
    # rewrites its box in place and the two share no base line, so each is written where
    # it is (rule step 3), and a tick in place is not a line both may have added (step 4).
    ("ticks among identical boxes", "- [ ] t\n- [ ] t\n- [ ] t\n- [ ] t\n", "- [ ] t\n- [x] t\n- [ ] t\n- [ ] t\n",
     "- [ ] t\n- [ ] t\n- [ ] t\n- [x] t\n", "- [ ] t\n- [x] t\n- [ ] t\n- [x] t\n", False),
    ("ticks among identical spaced boxes", "- [ ] t\n\n- [ ] t\n\n- [ ] t\n", "- [x] t\n\n- [ ] t\n\n- [ ] t\n",
     "- [ ] t\n\n- [ ] t\n\n- [x] t\n", "- [x] t\n\n- [ ] t\n\n- [x] t\n", False),
    ("ticks among identical boxes, crlf", "- [ ] t\r\n- [ ] t\r\n- [ ] t\r\n- [ ] t\r\n",
     "- [ ] t\r\n- [x] t\r\n- [ ] t\r\n- [ ] t\r\n", "- [ ] t\r\n- [ ] t\r\n- [ ] t\r\n- [x] t\r\n",
     "- [ ] t\r\n- [x] t\r\n- [ ] t\r\n- [x] t\r\n", False),
    # Issue 41: an item appended to a list, a section added after it.  Theirs' section,
    # its last line blank, has one place after a blank line of base (rule step 1); ours'
    # item touches its span only across that blank line, so they do not meet (step 3).
    ("list item beside a new section", "* a\n* b\n\n## Next\n\n* c\n", "* a\n* b\n* new\n\n## Next\n\n* c\n",
     "* a\n* b\n\n## Mid\n\n* m\n\n## Next\n\n* c\n", "* a\n* b\n* new\n\n## Mid\n\n* m\n\n## Next\n\n* c\n", False),
    ("list item beside a new section, crlf", "* a\r\n* b\r\n\r\n## Next\r\n\r\n* c\r\n",
     "* a\r\n* b\r\n* new\r\n\r\n## Next\r\n\r\n* c\r\n",
     "* a\r\n* b\r\n\r\n## Mid\r\n\r\n* m\r\n\r\n## Next\r\n\r\n* c\r\n",
     "* a\r\n* b\r\n* new\r\n\r\n## Mid\r\n\r\n* m\r\n\r\n## Next\r\n\r\n* c\r\n", False),
    ("changelog entry beside a new release", "# Changelog\n\n## Unreleased\n\n- Fix a.\n- Add b.\n\n## 1.1.0\n\n- Old.\n",
     "# Changelog\n\n## Unreleased\n\n- Fix a.\n- Add b.\n- Add c.\n\n## 1.1.0\n\n- Old.\n",
     "# Changelog\n\n## Unreleased\n\n- Fix a.\n- Add b.\n\n## 1.2.0\n\n- Release.\n\n## 1.1.0\n\n- Old.\n",
     "# Changelog\n\n## Unreleased\n\n- Fix a.\n- Add b.\n- Add c.\n\n## 1.2.0\n\n- Release.\n\n## 1.1.0\n\n- Old.\n",
     False),
    # Which of two new sections at one place comes first is not known.
    ("two new sections at one place", "* a\n* b\n\n## Next\n", "* a\n* b\n\n## X\n\n* x\n\n## Next\n",
     "* a\n* b\n\n## Y\n\n* y\n\n## Next\n",
     f"* a\n* b\n\n{START}## X\n{SEPARATOR}## Y\n{END}\n{START}* x\n{SEPARATOR}* y\n{END}\n## Next\n", True),
]


CASES_BY_NAME = {case[0]: case for case in CASES}


@pytest.mark.parametrize("name,base,ours,theirs,merged,conflict", CASES, ids=[c[0] for c in CASES])
def test_merge_table(name, base, ours, theirs, merged, conflict):
    assert diff3(base, ours, theirs) == Merge(merged, conflict)
    swapped = diff3(base, theirs, ours)
    assert swapped.had_conflict == conflict
    if not conflict:
        assert swapped.merged == merged


# Each was once clean and wrong; each must be right or a conflict (issue 9).
REPRODUCTIONS = [
    ("same insertion by both", "# Doc\n\nintro\n\n## Z\n", "# Doc\n\nintro\n\n## Y\n\n## Z\n",
     "# Doc!\n\nintro\n\n## Y\n\n## Z\n", "# Doc!\n\nintro\n\n## Y\n\n## Z\n", False),
    ("same point, one edits on", "## A\n\na\n\n## C\n\nc\n", "## A\n\na\n\n## B\n\nb - S\n\n## C\n\nc\n",
     "## A!\n\na\n\n## B\n\nb\n\n## C\n\nc\n", f"## A!\n\na\n\n## B\n\n{START}b - S\n{SEPARATOR}b\n{END}\n## C\n\nc\n", True),
    # Clean and wrong before issue 25, a conflict from then to issue 37, right since:
    # Myers' minimal diff pairs the boxes in the one way that keeps the most lines
    # (ours ticks boxes 1, 2 and 4), and theirs' untick of box 3 merges beside them.
    ("edit on the right one of equal lines",
     "- [ ] todo\n\n- [ ] todo\n\n- [x] todo\n\n- [ ] todo\n", "- [x] todo\n\n- [x] todo\n\n- [x] todo\n\n- [x] todo\n",
     "- [ ] todo\n\n- [ ] todo\n\n- [ ] todo\n\n- [ ] todo\n",
     "- [x] todo\n\n- [x] todo\n\n- [ ] todo\n\n- [x] todo\n", False),
    ("touching across a blank line", "## A\n\n- old\n\n## B\n", "## A\n\n## New\n\ntext\n\n## B\n",
     "## A\n\n- old\n- added\n\n## B\n", f"## A\n\n{START}## New\n\ntext\n{SEPARATOR}- old\n- added\n{END}\n## B\n", True),
    ("emptied vs appended", "a\nb\n", "", "a\nb\nc\n", f"{START}{SEPARATOR}a\nb\nc\n{END}", True),
    # Issue 25: each merged clean with a line twice; rule step 4 makes them conflict.
    # The changes meet no base line apart, so they are one block, and the lines both
    # sides of it share stay outside its markers (step 6): taking either side holds
    # each line once.
    ("replaced beside the same insertion", "x\n5\ny\n", "x\nA\nD\ny\n", "x\nA\n5\ny\n",
     f"x\nA\n{START}D\n{SEPARATOR}5\n{END}y\n", True),
    ("the same import added by both", "import os\nx = 1\n", "import os\nimport sys\nx = 2\n",
     "import os\nimport sys\nx = 1\n", f"import os\nimport sys\n{START}x = 2\n{SEPARATOR}x = 1\n{END}",
     True),
    ("git's zdiff3 interesting", "".join(f"{c}\n" for c in "123456789"), "".join(f"{c}\n" for c in "1234ABCDEFGHIJ789"),
     "".join(f"{c}\n" for c in "1234ABC56GHIJ789"),
     "1\n2\n3\n4\nA\nB\nC\n" + START + "D\nE\nF\n" + SEPARATOR + "5\n6\n" + END + "G\nH\nI\nJ\n7\n8\n9\n", True),
    # Clean with "- one" twice until the safety net knew a line both sides moved, each
    # elsewhere.  Since issue 32 each place is a block of its own (a base line apart).
    ("one list item moved to two places", "# T\n\n- one\n- two\n- three\n- four\n",
     "# T\n\n- two\n- three\n- one\n- four\n", "# T\n\n- two\n- one\n- three\n- four\n",
     f"# T\n\n- two\n{START}{SEPARATOR}- one\n{END}- three\n{START}- one\n{SEPARATOR}{END}- four\n", True),
    # Issue 32, seen in a real merge of a book list: each side made a new section
    # holding the same entry.  Clean before, with the entry twice.
    ("the same entry in two new sections", "# Books\n\n## Fiction\n\n- Dune\n\n## Poetry\n\n- Odes\n",
     "# Books\n\n## Classics\n\n- Iliad\n\n## Fiction\n\n- Dune\n\n## Poetry\n\n- Odes\n",
     "# Books\n\n## Fiction\n\n- Dune\n\n## Poetry\n\n- Odes\n\n## Epics\n\n- Iliad\n",
     f"# Books\n\n{START}## Classics\n\n- Iliad\n\n{SEPARATOR}{END}## Fiction\n\n- Dune\n\n## Poetry\n\n- Odes\n"
     f"{START}{SEPARATOR}\n## Epics\n\n- Iliad\n{END}", True),
    # Issue 32: among equal boxes ours ticks one and unticks another, and theirs
    # unticks the same one.  Clean before, without ours' tick.
    ("a tick that moved between equal boxes", "- [ ] todo\n- [x] todo\n- [ ] todo\n",
     "- [x] todo\n- [ ] todo\n- [ ] todo\n", "- [ ] todo\n- [ ] todo\n- [ ] todo\n",
     f"{START}- [x] todo\n{SEPARATOR}- [ ] todo\n{END}- [ ] todo\n- [ ] todo\n", True),
    ("a tick that moved between equal spaced boxes", "- [x] a\n\n- [ ] a\n\n- [ ] a\n",
     "- [ ] a\n\n- [ ] a\n\n- [x] a\n", "- [ ] a\n\n- [ ] a\n\n- [ ] a\n",
     f"- [ ] a\n\n- [ ] a\n\n{START}- [x] a\n{SEPARATOR}- [ ] a\n{END}", True),
    # Issue 41: clean, with the sections in either order, where blank lines were taken
    # out of spans (step 1) to merge a list item beside a new section.
    ("two new sections at one place, one side appending", "* a\n* b\n\n## Next\n",
     "* a\n* b\n\n## X\n\n* x\n\n## Next\n", "* a\n* b\n* new\n\n## Y\n\n* y\n\n## Next\n",
     f"* a\n* b\n{START}{SEPARATOR}* new\n{END}\n{START}## X\n{SEPARATOR}## Y\n{END}\n{START}* x\n{SEPARATOR}"
     f"* y\n{END}\n## Next\n", True),
    ("a new section and a paragraph's new line, beside another new section", "## A\n\npara\n\n## B\n",
     "## A\n\npara\n\n## X\n\nx\n\n## B\n", "## A\n\npara\nmore\n\n## Y\n\ny\n\n## B\n",
     f"## A\n\npara\n{START}{SEPARATOR}more\n{END}\n{START}## X\n{SEPARATOR}## Y\n{END}\n{START}x\n{SEPARATOR}"
     f"y\n{END}\n## B\n", True),
    # Issue 41: clean where any insertion (not only one framed by blank lines, rule step 1)
    # kept apart from one touching it across blank lines: theirs' "y" may be before or
    # after base's blank line, and so may ours' "x" be after or before theirs' "y".
    ("an insertion not framed, touching across a blank line", "a\n\nb\n", "a\n\nx\nb\n", "a\ny\n\n\nb\n",
     f"a\n{START}{SEPARATOR}y\n{END}\n{START}x\n{SEPARATOR}\n{END}b\n", True),
]


CASES_BY_NAME_REPRO = {r[0]: r for r in REPRODUCTIONS}


@pytest.mark.parametrize("name,base,ours,theirs,merged,conflict", REPRODUCTIONS, ids=[r[0] for r in REPRODUCTIONS])
def test_reproductions_are_right_or_conflict(name, base, ours, theirs, merged, conflict):
    assert diff3(base, ours, theirs) == Merge(merged, conflict)
    assert diff3(base, theirs, ours).had_conflict == conflict


# For each heuristic of the rule, a merge that is clean and wrong without it: each was
# found by running the bench shapes with that step alone taken out (issue 37).  Steps 3
# and 4 have theirs above ("emptied vs appended", "the same import added by both").
NEEDED = [
    ('step 1: a change spans the base lines beside it that equal a line it adds (sections 203)',
     '# Title\n\n## Notes\n\nVersion draft version publish version.\nTheirs publish agent edit note base.\n\n## Part 1\n\n- Edit version change.\n- Conflict version version section.\n- Version version base document draft.\n',
     '# Title\n\n## Notes\n\nVersion draft version publish version.\nTheirs publish agent edit note base (edit 2994e40a19).\n\n## New 00c5276837\n\nText 19b107bee3\n\n## Part 1\n\n- Edit version change.\n- Conflict version version section.\n- Version version base document draft.\n',
     '# Title\n\n## Notes\n\nVersion draft version publish version.\nTheirs publish agent edit note base.\nSentence 2c80083833.\n\n## Part 1\n\n- Edit version change.\n- Conflict version version section.\n- Version version base document draft.\n'),
    ('step 2: which copy of a repeated line a change removed is not known (checklist 451)',
     '- [x] todo\n- [ ] todo\n- [ ] call\n- [ ] todo\n- [ ] todo\n- [ ] call\n- [x] todo\n',
     '- [x] todo\n- [ ] task 3122bacff4\n- [ ] todo\n- [ ] call\n- [ ] todo\n- [ ] task 4841fcd502\n- [ ] todo\n- [ ] call\n- [x] todo\n',
     '- [ ] todo\n- [ ] call\n- [ ] todo\n- [ ] todo\n- [ ] call\n- [x] todo\n'),
    ("step 2: nor where the removed copy's edges are (checklist 207)",
     '- [ ] call\n- [ ] call\n- [x] todo\n- [ ] todo\n',
     '- [ ] call\n- [ ] call\n- [ ] todo\n- [x] todo\n- [ ] todo\n- [ ] task b95418eb90\n',
     '- [ ] call\n- [x] todo\n'),
    ('step 5: ticks that read as a move (lookalike 6)',
     '- [ ] call\n- [x] test\n- [x] call\n- [ ] test\n',
     '- [ ] call\n- [ ] test\n- [x] call\n- [x] test\n',
     '- [x] test\n- [x] call\n'),
]


@pytest.mark.parametrize("name,base,ours,theirs", NEEDED, ids=[n[0].split(" (")[0] for n in NEEDED])
def test_each_heuristic_step_prevents_a_wrong_merge(name, base, ours, theirs):
    assert diff3(base, ours, theirs).had_conflict
    assert diff3(base, theirs, ours).had_conflict



# Why each conflict is one (issue 37): explain() names the rule step, in words.
EXPLAINED = [
    ("step 1", "a\n\n\nb\n", "a\n\n\n\nb\n", "a\n\nc\n\nb\n", [(3, 7, "both sides changed base lines 2-3, "
     "where ours' change could sit anywhere among lines like its own (rule steps 1 and 3)")]),
    # (Two new sections at one place meet: neither is away from the other's place.)
    ("step 1, framed", "* a\n\n## Next\n", "* a\n\n## B\n\n## Next\n", "* a\n\n## C\n\n## Next\n",
     [(3, 7, "both sides changed base line 2, where ours' change could sit anywhere among lines like its own "
      "(rule steps 1 and 3)")]),
    ("step 2", NEEDED[2][1], NEEDED[2][2], NEEDED[2][3], [(2, 6, 'theirs removed "- [ ] call", which base holds '
     "more than once, and which copy went is not known; the other side changed base lines 1-2 near a copy (rule step 2)")]),
    ("step 3, changed", "a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n", [(2, 6, "both sides changed base line 2 (rule step 3)")]),
    ("step 3, inserted", "a\nb\n", "a\nX\nb\n", "a\nY\nb\n",
     [(2, 6, "both sides inserted different lines at the place after base line 1 (rule step 3)")]),
    ("step 3, emptied", "a\nb\n", "", "a\nb\nc\n", [(1, 6, "ours removed every line, and theirs changed the document "
     "(rule step 3)")]),
    ("step 4", *CASES_BY_NAME_REPRO["the same import added by both"][1:4], [(3, 7, 'the merge would hold "import sys" '
     "more often than ours and than theirs: both may have added it (rule step 4)")]),
    # Ours' ticks (untick the first "a", tick the other) also read as a box moving.
    ("step 5, ticks", "- [x] a\n- [ ] b\n- [ ] a\n", "- [ ] a\n- [ ] b\n- [x] a\n", "- [x] a\n- [ ] b\nnew\n- [ ] a\n",
     [(1, 12, "base lines 1-3 hold look-alike lines the diff can pair two ways, and the two ways merge differently "
      "(rule step 5)")]),
    ("step 5", NEEDED[3][1], NEEDED[3][2], NEEDED[3][3], [(1, 11, "base lines 1-4 hold look-alike lines the diff can "
     "pair two ways, and the two ways merge differently (rule step 5)")]),
]


@pytest.mark.parametrize("name,base,ours,theirs,expected", EXPLAINED, ids=[e[0] for e in EXPLAINED])
def test_explain_names_the_step_of_each_conflict(name, base, ours, theirs, expected):
    merged, _ = diff3(base, ours, theirs)
    conflicts = explain(base, ours, theirs)
    lines = merged.split("\n")
    for start, end, _ in conflicts:  # each spans its markers, as the merge numbers its lines
        block = lines[start - 1:end]
        assert any(line.startswith("<<<<<<< ") for line in block) and block[-1].startswith(">>>>>>> ")
    assert [tuple(c) for c in conflicts] == expected
    assert explain(base, base, theirs) == []


def test_cli_explain_says_why_on_stderr(files, capsysbinary):
    p = files(ours="a\nX\nc\n", base="a\nb\nc\n", theirs="a\nY\nc\n")
    assert main([p["ours"], p["base"], p["theirs"], "--explain", "-L", "o", "-L", "b", "-L", "t"]) == 1
    captured = capsysbinary.readouterr()
    assert captured.out == f"a\n<<<<<<< o\nX\n{SEPARATOR}Y\n>>>>>>> t\nc\n".encode()
    assert captured.err == b"mark-diff3: lines 2-6: both sides changed base line 2 (rule step 3)\n"


def counts(text):
    return Counter(line for line in text.split("\n") if line.strip())


@functools.lru_cache(maxsize=None)
def generated(shape, seed):
    """A generated case and its merge, made once for the tests that look at them."""
    case = generate(shape, seed)
    return case, diff3(case.base, case.ours, case.theirs)


@pytest.mark.parametrize("shape", SHAPES)
def test_generated_cases_never_merge_clean_and_wrong(shape):
    # testkit applies two edit scripts at known places, so the intended
    # merge is known (None where the edits meet and only a conflict is right).
    clean = intended = 0
    for seed in range(1500):
        case, (merged, conflict) = generated(shape, seed)
        if not conflict:
            assert merged == case.intended, (shape, seed)
            sides = [counts(case.ours), counts(case.theirs), counts(case.intended)]
            assert all(n <= max(c[line] for c in sides) for line, n in counts(merged).items()), (shape, seed)
        intended += case.intended is not None
        clean += not conflict
    if shape == "adjacent":  # unique lines: the order of neighbouring edits is certain
        assert clean >= 0.95 * intended


@pytest.mark.parametrize("shape", [shape for shape in SHAPES if shape != "ticks"])
def test_no_clean_merge_holds_a_new_line_more_often_than_both_sides(shape):
    # A line base lacks, held more often than ours and theirs each hold it: a change merged twice.
    # (Not "ticks": each side ticks other boxes of one text, and the merge rightly holds
    # "- [x] todo" as often as both together; ticks in place are not doubled, rule step 4.)
    triples = [(r[1], r[2], r[3]) for r in REPRODUCTIONS] + [
        (case.base, case.ours, case.theirs) for case in (generate(shape, seed) for seed in range(1500))]
    for base, ours, theirs in triples:
        for mine, yours in ((ours, theirs), (theirs, ours)):
            merged, conflict = diff3(base, mine, yours)
            if conflict:
                continue
            had, a, b = counts(base), counts(mine), counts(yours)
            assert all(n <= max(a[line], b[line]) or had[line] for line, n in counts(merged).items()), (base, mine, yours)


def test_the_safety_net_shows_base_in_diff3_style():
    base, ours, theirs = CASES_BY_NAME_REPRO["the same import added by both"][1:4]
    assert diff3(base, ours, theirs, style="diff3") == Merge(
        f"import os\n{START}import sys\nx = 2\n||||||| base\nx = 1\n{SEPARATOR}import sys\nx = 1\n{END}", True)


def resolved(merged, keep):
    """The merge with each conflict block replaced by its `keep` side ("ours" or "theirs")."""
    out, part = [], None
    for line in merged.split("\n"):
        if line.startswith("<<<<<<< "):
            part = "ours"
        elif line.startswith("||||||| ") and part:
            part = "base"
        elif line.startswith("=======") and part:
            part = "theirs"
        elif line.startswith(">>>>>>> "):
            part = None
        elif part in (None, keep):
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("shape", [shape for shape in SHAPES if shape != "lookalike"])
def test_generated_conflicts_show_each_line_once(shape):
    # A conflict goes to a person or an LLM: taking either side of every
    # block must not show a line more often than base and the lines each
    # side added.  (Runs of changes once came out of order, and a block
    # then repeated lines already merged above it.)  Not for "lookalike":
    # there a tick can make a line base holds elsewhere, and taking ours'
    # side of a block shows base's copy beside theirs' tick merged above.
    for seed in range(1500):
        case, (merged, conflict) = generated(shape, seed)
        if not conflict:
            continue
        base, ours, theirs = counts(case.base), counts(case.ours), counts(case.theirs)
        for keep in ("ours", "theirs"):
            for line, n in counts(resolved(merged, keep)).items():
                assert n <= base[line] + max(0, ours[line] - base[line]) + max(0, theirs[line] - base[line]), \
                    (shape, seed, keep, line)


# Found by running seeds far beyond the suite's range; each was clean and wrong:
# a box added to a run of equal boxes (or deleted from one) could sit anywhere
# in the run, blank lines tipped which copy of a repeated section was
# deleted, (31796) ours ticking a box read as deleting it, the deletion
# theirs made, and (61354) theirs deleting one of four equal sections read
# as the one ours left alone.  Each must now be right or a conflict.
@pytest.mark.parametrize("shape,seed", [
    ("checklist", 3963), ("checklist", 9823), ("checklist", 12019), ("checklist", 15158),
    ("checklist", 19229), ("checklist", 22296), ("checklist", 31796), ("checklist", 39090),
    ("duplicated", 4357), ("duplicated", 33450), ("duplicated", 61354),
])
def test_far_seeds_once_clean_and_wrong(shape, seed):
    case = generate(shape, seed)
    merged, conflict = diff3(case.base, case.ours, case.theirs)
    assert conflict or merged == case.intended


def test_get_hunks_slides_to_one_place():
    # "x, blank" inserted before a blank line reads the same as "blank, x"
    # after it: the hunk goes as far down as it can.
    assert get_hunks(["a", "", "b"], ["a", "", "x", "", "b"]) == [(2, 2, 2, 4)]
    assert get_hunks([1, 2, 3], [1, 3]) == [(1, 2, 1, 1)]


def test_diff3_style_and_labels():
    result = diff3("a\nb\nc\n", "a\nX\nc\n", "a\nY\nc\n", style="diff3", labels=("mine", "orig", "yours"))
    assert result == ("a\n<<<<<<< mine\nX\n||||||| orig\nb\n=======\nY\n>>>>>>> yours\nc\n", True)


@pytest.mark.parametrize("args,error,word", [
    ((None, "", ""), TypeError, "base"),
    (("", b"x", ""), TypeError, "ours"),
    (("", "", 3), TypeError, "theirs"),
])
def test_non_str_input_names_argument(args, error, word):
    with pytest.raises(error, match=word):
        diff3(*args)


@pytest.mark.parametrize("kwargs,error,word", [
    ({"style": "zealous"}, ValueError, "style"),
    ({"labels": ("a", "b")}, TypeError, "labels"),
    ({"labels": "abc"}, TypeError, "labels"),
    ({"labels": ("a", 1, "c")}, TypeError, "labels"),
    ({"labels": ("a", "b\nc", "d")}, ValueError, "labels"),
])
def test_bad_options_name_argument(kwargs, error, word):
    with pytest.raises(error, match=word):
        diff3("a\n", "b\n", "c\n", **kwargs)


def join(lines):
    return "".join(line + "\n" for line in lines)


def test_a_long_checklist_of_equal_boxes_merges_edits_far_apart():
    # Issue 37: 2,400 lines of equal boxes and blank lines, no line once in base; each
    # side replaces two far-apart boxes with text of its own.  Myers' minimal diff finds
    # each change alone (from issue 32 to 36 the whole stretch was one change, a conflict).
    # Each box is edited in place (rule step 2): a box replaced by unlike text could be
    # one removed anywhere in the list, and meets the other side's edits.
    base = ["- [ ] todo", ""] * 1200
    ours, theirs, intended = list(base), list(base), list(base)
    for side, spots in ((ours, (300, 1500)), (theirs, (800, 2100))):
        for i in spots:
            side[i] = intended[i] = f"- [x] todo {i}"
    assert diff3(join(base), join(ours), join(theirs)) == (join(intended), False)
    assert diff3(join(base), join(theirs), join(ours)) == (join(intended), False)


def test_the_work_limit_turns_a_clean_merge_into_a_conflict_not_another_merge(monkeypatch):
    # Ours ticks two boxes far apart among equal ones (one stretch, no line once in each);
    # theirs adds a line between them.  Under the limit Myers' diff finds the two ticks and
    # the merge is clean; above it the stretch is one change, and theirs' line is inside it.
    base = ["- [ ] todo", ""] * 300
    ours, theirs = list(base), list(base)
    ours[100] = ours[500] = "- [x] todo"
    theirs.insert(301, "- [ ] new")
    intended = list(ours)
    intended.insert(301, "- [ ] new")
    assert diff3(join(base), join(ours), join(theirs)) == (join(intended), False)
    monkeypatch.setattr(diff3_module, "WORK_LIMIT", 100)
    assert get_hunks(base, ours) == [(100, 501, 100, 501)]
    merged, conflict = diff3(join(base), join(ours), join(theirs))
    assert conflict and merged == join(base[:100]) + START + join(ours[100:501]) + SEPARATOR + \
        join(theirs[100:502]) + END + join(base[501:])


def test_a_lower_work_limit_never_gives_another_clean_merge(monkeypatch):
    # Few distinct lines, so the stretches go to Myers' diff: whatever merges cleanly
    # with a small limit merges to the same text with the default one.
    rng = random.Random(37)
    triples = []
    for _ in range(300):
        base = [rng.choice(["- [ ] a", "- [x] a", ""]) for _ in range(rng.randint(0, 40))]
        sides = []
        for _ in range(2):
            side = list(base)
            for _ in range(rng.randint(1, 3)):
                at = rng.randint(0, len(side))
                side[at:at + rng.randint(0, 2)] = [rng.choice(["- [ ] a", "- [x] a", "", "new"])]
            sides.append(side)
        triples.append((join(base), join(sides[0]), join(sides[1])))
    full = [diff3(*triple) for triple in triples]
    compared = 0
    for limit in (0, 20, 100):
        monkeypatch.setattr(diff3_module, "WORK_LIMIT", limit)
        for triple, merge in zip(triples, full):
            small = diff3(*triple)
            if not small.had_conflict:
                assert small == merge, triple
                compared += 1
    assert compared > 100


def test_random_reticks_conflict_and_lose_nothing():
    # Ours re-ticks a checklist at random: no line is unique, so no pairing of
    # its lines is certain.  Theirs' one change conflicts, and both survive.
    rng = random.Random(5)
    boxes = ["- [ ] todo\n", "- [x] todo\n"]
    base = [rng.choice(boxes) for _ in range(1000)]
    ours = [rng.choice(boxes) for _ in range(1000)]
    theirs = base[:500] + ["mid\n"] + base[501:]
    assert diff3("".join(base), "".join(ours), "".join(base)) == ("".join(ours), False)
    merged, conflict = diff3("".join(base), "".join(ours), "".join(theirs))
    assert conflict and "mid\n" in merged
    kept_ours = re.sub(f"{SEPARATOR}.*?{END}", "", merged.replace(START, ""), flags=re.S)
    assert kept_ours == "".join(ours)


def apply_hunks(a, b, hunks):
    """`a` with each hunk's lines of `b` in place of its own: `b` again, if the hunks are a diff."""
    out, at = [], 0
    for a_lo, a_hi, b_lo, b_hi in hunks:
        out += a[at:a_lo] + b[b_lo:b_hi]
        at = a_hi
    return out + a[at:]


def lcs_length(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = table[i + 1][j + 1] + 1 if a[i] == b[j] else max(table[i + 1][j], table[i][j + 1])
    return table[0][0]


def kept(a, hunks):
    """How many elements of `a` no hunk touches."""
    return len(a) - sum(a_hi - a_lo for a_lo, a_hi, _, _ in hunks)


@pytest.mark.parametrize("alphabet", [3, 30, 300])
def test_get_hunks_is_a_diff(alphabet):
    # Few distinct lines (stretches with no anchor), some, and mostly unique ones
    # (anchors, moved blocks and the patience chain).
    rng = random.Random(alphabet)
    for _ in range(300):
        a = [rng.randrange(alphabet) for _ in range(rng.randint(0, 120))]
        b = list(a)
        for _ in range(rng.randint(0, 4)):
            at = rng.randint(0, len(b))
            roll = rng.random()
            if roll < 0.3 and b:  # move a block
                block = b[at:at + rng.randint(1, 15)]
                del b[at:at + len(block)]
                where = rng.randint(0, len(b))
                b[where:where] = block
            elif roll < 0.6:
                b[at:at + rng.randint(0, 5)] = [rng.randrange(alphabet) for _ in range(rng.randint(0, 5))]
            else:
                del b[at:at + rng.randint(1, 40)]
        hunks = get_hunks(a, b)
        assert apply_hunks(a, b, hunks) == b
        assert all(h[1] - h[0] or h[3] - h[2] for h in hunks)
        assert all(x[1] < y[0] for x, y in zip(hunks, hunks[1:]))


def longest_ascending(values):
    """Length of the longest strictly ascending subsequence, the quadratic way."""
    best = []
    for k, v in enumerate(values):
        best.append(1 + max((best[m] for m in range(k) if values[m] < v), default=0))
    return max(best, default=0)


def test_get_hunks_keeps_the_longest_chain_of_unique_lines():
    # Where a unique line moved, the lines found once on each side are kept in
    # their longest common order (patience diff), and no other unique line.
    rng = random.Random(11)
    for _ in range(300):
        a = rng.sample(range(1000), rng.randint(5, 80))
        b = list(a)
        for _ in range(rng.randint(1, 3)):
            block = b[(lo := rng.randrange(len(b))):lo + rng.randint(1, 10)]
            del b[lo:lo + len(block)]
            at = rng.randint(0, len(b))
            b[at:at] = block
        hunks = get_hunks(a, b)
        assert apply_hunks(a, b, hunks) == b
        assert kept(a, hunks) == longest_ascending([b.index(x) for x in a])


@pytest.mark.parametrize("alphabet", [2, 3])
def test_get_hunks_is_minimal_where_no_line_is_once_in_each(alphabet):
    # Myers' diff keeps as many lines as any diff can (the longest common subsequence).
    rng = random.Random(alphabet + 1)
    compared = 0
    for _ in range(400):
        a = [rng.randrange(alphabet) for _ in range(rng.randint(0, 40))]
        b = [rng.randrange(alphabet) for _ in range(rng.randint(0, 40))]
        if any(a.count(x) == 1 == b.count(x) for x in a):
            continue
        hunks = get_hunks(a, b)
        assert apply_hunks(a, b, hunks) == b
        assert kept(a, hunks) == lcs_length(a, b), (a, b)
        compared += 1
    assert compared > 300


@pytest.mark.parametrize("extra_blank", [False, True])
def test_rewrite_is_diffed_minimally(extra_blank):
    # A rewrite leaves most lines on one side only; the headings are anchors, and
    # the blank lines between them are matched as the equal ends of each stretch.
    rng = random.Random(4)
    base = []
    for section in range(30):
        base += [f"## {section}", ""] + [f"text {section} {k}" for k in range(rng.randint(2, 8))] + [""]
    side = [line if not line or line.startswith("#") else f"new {rng.random()}" for line in base]
    if extra_blank:
        side[len(side) // 2:len(side) // 2] = ["", "new paragraph"]
    hunks = get_hunks(base, side)
    assert apply_hunks(base, side, hunks) == side
    assert kept(base, hunks) == lcs_length(base, side)


def test_a_stretch_with_no_line_once_in_each_gets_a_minimal_diff():
    # A replaced box, an added one and a removed one in 30,000 lines with no line once in
    # each text: three changes, where issues 32-36 saw one from the first to the last.
    a = ["- [ ] todo", "", "- [ ] todo", "- [ ] todo", ""] * 6000
    b = list(a)
    b[7000] = "- [x] todo"
    b.insert(20000, "- [ ] todo")
    del b[25000]
    hunks = get_hunks(a, b)
    assert apply_hunks(a, b, hunks) == b and kept(a, hunks) == len(a) - 2


@pytest.mark.parametrize("collecting", [True, False])
def test_the_cyclic_collector_is_left_as_it_was(collecting):
    # A library must not change its host's global state (diff3 paused it until issue 32).
    before = gc.isenabled()
    (gc.enable if collecting else gc.disable)()
    try:
        assert diff3("a\nb\n", "A\nb\n", "a\nB\n") == Merge("A\nB\n", False)
        assert gc.isenabled() is collecting
    finally:
        (gc.enable if before else gc.disable)()


# ----------------------------------------------------- randomized properties

def random_text(rng, alphabet="abc", most=12):
    lines = [rng.choice(alphabet) for _ in range(rng.randint(0, most))]
    text = "\n".join(lines)
    return text + "\n" if lines and rng.random() < 0.8 else text


def mutate(rng, text):
    lines = text.split("\n")
    for _ in range(rng.randint(0, 3)):
        at = rng.randint(0, len(lines))
        roll = rng.random()
        if roll < 0.4:
            lines.insert(at, rng.choice("abcxyz") * rng.randint(1, 3))
        elif roll < 0.7 and at < len(lines):
            del lines[at]
        elif at < len(lines):
            lines[at] = rng.choice("abcxyz")
    return "\n".join(lines)


def test_an_anchor_taken_by_a_lone_change_reads_as_a_move():
    # b's "L" is read as replacing "Y1" (four equal lines follow), so a's "L",
    # further on, is an anchor b has passed: this once read past b's end.
    a = ["X", "M", "Y1", "A1", "A2", "A3", "A4", "A5", "Q", "L", "R"]
    b = ["Z", "M", "L", "A1", "A2", "A3", "A4", "A5", "Q'", "S"]
    assert apply_hunks(a, b, get_hunks(a, b)) == b
    base, ours = ("".join(line + "\n" for line in text) for text in (a, b))
    assert diff3(base, ours, base) == (ours, False)
    assert diff3(base, ours, base.replace("R\n", "R, theirs\n")).had_conflict


def moved(rng, lines):
    """`lines` with up to five edits: blocks moved, lines replaced, inserted (some copies), deleted."""
    lines = list(lines)
    for _ in range(rng.randint(0, 5)):
        at = rng.randrange(len(lines) + 1)
        roll = rng.random()
        if roll < 0.25 and at < len(lines):
            size = rng.randint(1, 4)
            block = lines[at:at + size]
            del lines[at:at + size]
            to = rng.randint(0, len(lines))
            lines[to:to] = block
        elif roll < 0.5 and at < len(lines):
            lines[at] = f"r{rng.randrange(1000)}"
        elif roll < 0.75 or at == len(lines):
            lines.insert(at, rng.choice([f"i{rng.randrange(1000)}", "", rng.choice(lines or ["x"])]))
        else:
            del lines[at]
    return lines


def test_moves_among_lone_edits_diff_and_merge_symmetrically():
    rng = random.Random(20)  # its case 2555 once made get_hunks read past a text's end
    for _ in range(3000):
        alphabet = rng.choice([3, 10, 40, 1000])
        base = [str(rng.randrange(alphabet)) if rng.random() < 0.8 else "" for _ in range(rng.randint(0, 40))]
        ours, theirs = moved(rng, base), moved(rng, base)
        for a, b in ((base, ours), (base, theirs), (ours, theirs)):
            assert apply_hunks(a, b, get_hunks(a, b)) == b
        texts = ["".join(line + "\n" for line in lines) for lines in (base, ours, theirs)]
        forward, backward = diff3(*texts), diff3(texts[0], texts[2], texts[1])
        assert forward.had_conflict == backward.had_conflict
        assert forward.had_conflict or forward.merged == backward.merged


def test_a_diff_that_broke_no_tie_is_the_same_read_backwards():
    # What rule step 5's shortcut stands on: where _diff says it broke no tie, the texts
    # reversed get the same hunks, reversed, but that one which only inserts or deletes
    # may sit higher, the same lines moved (rule step 1 spans both places).
    rng = random.Random(12)
    untied = slid = 0
    for _ in range(4000):
        alphabet = rng.choice([2, 3, 5, 20, 200])
        a = [rng.randrange(alphabet) for _ in range(rng.randint(0, 30))]
        b = moved(rng, a)
        hunks, tied = diff3_module._diff(a, b)
        if tied:
            continue
        untied += 1
        backwards = [(len(a) - h.a_hi, len(a) - h.a_lo, len(b) - h.b_hi, len(b) - h.b_lo)
                     for h in reversed(get_hunks(a[::-1], b[::-1]))]
        assert len(backwards) == len(hunks), (a, b)
        for (a_lo, a_hi, b_lo, b_hi), back in zip(hunks, backwards):
            up = a_lo - back[0]
            assert back == (a_lo - up, a_hi - up, b_lo - up, b_hi - up), (a, b)
            if up:
                slid += 1
                assert a_lo == a_hi or b_lo == b_hi  # only a hunk that inserts or deletes
                assert a[a_lo - up:a_hi] == a[a_lo - up:a_lo] + a[a_lo:a_hi] and \
                    b[b_lo - up:b_hi - up] + b[b_hi - up:b_hi] == b[b_lo - up:b_hi]  # the same text
    assert untied > 1000 and slid > 10

def test_the_reversed_reading_skipped_where_no_tie_was_broken_changes_nothing(monkeypatch):
    # diff3 reads the texts reversed only where a diff broke a tie (rule step 5); reading
    # them reversed always must give the same merges.  (Few distinct lines and blank runs:
    # where ties are; the merge of 6 of these cases changes if a hunk that could sit
    # higher is not counted as a tie.)
    rng = random.Random(5)
    triples = []
    for k in range(8000):
        if k % 2:
            base = random_text(rng, rng.choice(["ab", "abc", "a\n\n", ["", "", "x", "y"]]), most=15)
            triples.append((base, mutate(rng, base), mutate(rng, base)))
        else:
            lines = [rng.choice(["", "x", "y", "z"]) for _ in range(rng.randint(0, 12))]
            triples.append(tuple("".join(line + "\n" for line in text) for text in (lines, moved(rng, lines), moved(rng, lines))))
    merges = [diff3(*triple) for triple in triples]
    plain_diff = diff3_module._diff
    monkeypatch.setattr(diff3_module, "_diff", lambda a, b: (plain_diff(a, b)[0], True))
    assert [diff3(*triple) for triple in triples] == merges

def test_properties_on_random_triples():
    rng = random.Random(20261202)
    for _ in range(3000):
        base = random_text(rng)
        ours, theirs = mutate(rng, base), mutate(rng, base)
        assert diff3(base, base, theirs) == (theirs, False)
        assert diff3(base, ours, base) == (ours, False)
        assert diff3(base, ours, ours) == (ours, False)
        forward, backward = diff3(base, ours, theirs), diff3(base, theirs, ours)
        assert forward.had_conflict == backward.had_conflict
        if not forward.had_conflict:
            assert forward.merged == backward.merged
        for line in forward.merged.split("\n"):
            # markers always start a line; a line never glues to a marker
            assert not any(m in line[1:] for m in ("<<<<<<< ", "=======", ">>>>>>> "))


def test_properties_on_large_random_triples():
    # Big enough that anchors on unique lines and the recursion between them do the work.
    rng = random.Random(7)
    words = [f"w{k}" for k in range(150)]
    for _ in range(150):
        base = random_text(rng, words, most=300)
        ours, theirs = base, base
        for _ in range(rng.randint(1, 4)):
            ours, theirs = mutate(rng, ours), mutate(rng, theirs)
        assert diff3(base, ours, base) == (ours, False)
        assert diff3(base, ours, ours) == (ours, False)
        forward, backward = diff3(base, ours, theirs), diff3(base, theirs, ours)
        assert forward.had_conflict == backward.had_conflict
        if not forward.had_conflict:
            assert forward.merged == backward.merged


def test_moved_block_and_separate_edit():
    base = [f"line {k}" for k in range(200)]
    ours = base[:10] + base[21:] + base[10:21]
    ours[100] = "ours edit"
    theirs = list(base)
    theirs[150] = "theirs edit"
    expected = list(ours)
    expected[ours.index("line 150")] = "theirs edit"

    def text(lines):
        return "".join(line + "\n" for line in lines)

    assert diff3(text(base), text(ours), text(theirs)) == (text(expected), False)


def disjoint_edits(rng, n):
    """Edits (lo, hi, owner, lines) of distinct base ranges that cannot collide.

    Runs of changed lines belong to one side each; insertions only go
    between two lines nobody changes, so no insertion meets another edit.
    """
    owner = [rng.choice((None, None, None, "ours", "theirs")) for _ in range(n)]
    edits, counter = [], [0]

    def new_lines(side):
        counter[0] += 1
        return [f"{side}-{counter[0]}-{k}" for k in range(rng.randint(0, 3))]

    i = 0
    while i < n:
        if owner[i] is None:
            i += 1
            continue
        j = i
        while j < n and owner[j] == owner[i]:
            j += 1
        edits.append((i, j, owner[i], new_lines(owner[i])))
        i = j
    for point in range(n + 1):
        quiet = (point == 0 or owner[point - 1] is None) and (point == n or owner[point] is None)
        if quiet and rng.random() < 0.15:
            side = rng.choice(("ours", "theirs"))
            edits.append((point, point, side, new_lines(side) or [f"{side}-{point}"]))
    return sorted(edits, key=lambda e: (e[0], e[1]))


def apply_edits(base, edits):
    out, pos = [], 0
    for lo, hi, _, lines in edits:
        out += base[pos:lo] + lines
        pos = hi
    return out + base[pos:]


def test_random_disjoint_edits_merge_to_oracle():
    rng = random.Random(42)
    for _ in range(2000):
        base = [f"line {k}" for k in range(rng.randint(0, 25))]
        edits = disjoint_edits(rng, len(base))
        ours = apply_edits(base, [e for e in edits if e[2] == "ours"])
        theirs = apply_edits(base, [e for e in edits if e[2] == "theirs"])
        expected = apply_edits(base, edits)

        def text(lines):
            return "".join(line + "\n" for line in lines)

        assert diff3(text(base), text(ours), text(theirs)) == (text(expected), False)


# ------------------------------------------------------------------- CLI

@pytest.fixture
def files(tmp_path):
    def write(**texts):
        paths = {}
        for name, text in texts.items():
            path = tmp_path / name
            path.write_bytes(text if isinstance(text, bytes) else text.encode())
            paths[name] = str(path)
        return paths
    return write


def test_cli_clean_merge(files, capsysbinary):
    p = files(ours="A\nb\nc\n", base="a\nb\nc\n", theirs="a\nb\nC\n")
    assert main([p["ours"], p["base"], p["theirs"]]) == 0
    assert capsysbinary.readouterr().out == b"A\nb\nC\n"


def test_cli_conflict_labels_default_to_paths(files, capsysbinary):
    p = files(ours="X\n", base="a\n", theirs="Y\n")
    assert main([p["ours"], p["base"], p["theirs"], "--diff3"]) == 1
    out = capsysbinary.readouterr().out.decode()
    assert out == f"<<<<<<< {p['ours']}\nX\n||||||| {p['base']}\na\n=======\nY\n>>>>>>> {p['theirs']}\n"


def test_cli_labels(files, capsysbinary):
    p = files(ours="X\n", base="a\n", theirs="Y\n")
    assert main(["-L", "mine", "-L", "old", p["ours"], p["base"], p["theirs"]]) == 1
    out = capsysbinary.readouterr().out.decode()
    assert out.startswith("<<<<<<< mine\n") and out.endswith(f">>>>>>> {p['theirs']}\n")


def test_cli_too_many_labels(files, capsysbinary):
    p = files(ours="X\n", base="a\n", theirs="Y\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["-L", "1", "-L", "2", "-L", "3", "-L", "4", p["ours"], p["base"], p["theirs"]])
    assert exit_info.value.code == 2
    assert capsysbinary.readouterr().out == b""


@pytest.mark.parametrize("broken,message", [("missing", "No such file"), ("latin1", "not UTF-8")])
def test_cli_trouble(files, capsysbinary, broken, message):
    p = files(ours="x\n", base="x\n", theirs=b"caf\xe9\n")
    args = [p["ours"], p["base"], p["theirs"] if broken == "latin1" else p["theirs"] + ".missing"]
    assert main(args) == 2
    captured = capsysbinary.readouterr()
    assert captured.out == b""
    assert message in captured.err.decode() and captured.err.decode().count("\n") == 1


def test_cli_label_with_a_line_break_is_a_bad_argument(files, capsysbinary):
    p = files(ours="X\n", base="a\n", theirs="Y\n")
    with pytest.raises(SystemExit) as exit_info:
        main([p["ours"], p["base"], p["theirs"], "-L", "a\nb", "-L", "b", "-L", "c"])
    assert exit_info.value.code == 2
    captured = capsysbinary.readouterr()
    assert captured.out == b"" and b"line break" in captured.err and captured.err.count(b"\n") == 1


def test_cli_help_shows_the_git_driver_line_as_typed(capsys):
    # The description has no %(prog)s, so argparse prints it as written: "%A", not "%%A".
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert 'git config merge.mark.driver "mark-diff3 %A %O %B -o %A"' in " ".join(capsys.readouterr().out.split())


def test_cli_bad_option_is_one_line(files, capsysbinary):
    p = files(ours="X\n", base="a\n", theirs="Y\n")
    with pytest.raises(SystemExit) as exit_info:
        main([p["ours"], p["base"], p["theirs"], "--no-such-option"])
    assert exit_info.value.code == 2
    captured = capsysbinary.readouterr()
    assert captured.out == b"" and b"--no-such-option" in captured.err and captured.err.count(b"\n") == 1


def test_cli_output_file(files, tmp_path, capsysbinary):
    p = files(ours="A\nb\nc\n", base="a\nb\nc\n", theirs="a\nb\nC\n")
    assert main([p["ours"], p["base"], p["theirs"], "-o", p["ours"]]) == 0
    assert (tmp_path / "ours").read_bytes() == b"A\nb\nC\n"
    assert main([p["ours"], p["base"], p["theirs"], "--output", str(tmp_path / "none" / "out")]) == 2
    captured = capsysbinary.readouterr()
    assert captured.out == b"" and captured.err.decode().count("\n") == 1 and "No such file" in captured.err.decode()


def test_cli_closed_stdout_is_trouble(files, monkeypatch, capsys):
    # `mark-diff3 ... | head` closing the pipe early: one line and exit 2, not exit 1 ("conflicts").
    p = files(ours="A\nb\n", base="a\nb\n", theirs="a\nB\n")

    class ClosedPipe:
        def write(self, data):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", type("Stdout", (), {"buffer": ClosedPipe(), "flush": lambda self: None})())
    assert main([p["ours"], p["base"], p["theirs"]]) == 2
    assert capsys.readouterr().err == "mark-diff3: stdout: Broken pipe\n"

def test_git_merge_driver(tmp_path):
    # A real `git merge` of two branches through the driver, as the README sets it up.
    script = diff3_module.__file__
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True, env=env)

    git("init", "-q", "-b", "main")
    for key, value in (("user.name", "t"), ("user.email", "t@example.com"),
                       ("merge.mark.driver", f"{sys.executable} {script} %A %O %B -o %A")):
        git("config", key, value)
    (tmp_path / ".gitattributes").write_text("*.md merge=mark\n")
    (tmp_path / "near.md").write_text("one\ntwo\nthree\nfour\n")
    (tmp_path / "same.md").write_text("one\ntwo\nthree\n")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    git("checkout", "-q", "-b", "other")
    (tmp_path / "near.md").write_text("one\ntwo\nTHREE, theirs\nfour\n")
    (tmp_path / "same.md").write_text("one\ntwo, theirs\nthree\n")
    git("commit", "-q", "-am", "theirs")
    git("checkout", "-q", "main")
    (tmp_path / "near.md").write_text("one\nTWO, ours\nthree\nfour\n")
    (tmp_path / "same.md").write_text("one\ntwo, ours\nthree\n")
    git("commit", "-q", "-am", "ours")
    merge = git("merge", "--no-edit", "other")
    assert merge.returncode == 1 and "CONFLICT (content): Merge conflict in same.md" in merge.stdout
    assert "Merge conflict in near.md" not in merge.stdout
    assert (tmp_path / "near.md").read_text() == "one\nTWO, ours\nTHREE, theirs\nfour\n"
    for name, text in (("o", "one\nTWO, ours\nthree\nfour\n"), ("b", "one\ntwo\nthree\nfour\n"),
                       ("t", "one\ntwo\nTHREE, theirs\nfour\n")):
        (tmp_path / name).write_text(text)
    assert git("merge-file", "-p", "o", "b", "t").returncode == 1  # git's own merge conflicts there
    assert (tmp_path / "same.md").read_text().startswith("one\n<<<<<<< ")
    assert "two, ours\n=======\ntwo, theirs\n>>>>>>> " in (tmp_path / "same.md").read_text()


def test_python_dash_m(files):
    p = files(ours="a\r\nX\r\n", base="a\r\nb\r\n", theirs="a\r\nb\r\nc")
    run = subprocess.run([sys.executable, "-m", "diff3", p["ours"], p["base"], p["theirs"]],
                         capture_output=True, cwd=diff3_module.__file__.rsplit("/", 1)[0])
    assert (run.returncode, run.stdout, run.stderr) == (0, b"a\r\nX\r\nc", b"")


# ------------------------------------------- trace(), and the tie shortcut checked (issue 41)

def every_reproduction():
    """(base, ours, theirs) of each case in this file's tables, both ways round."""
    triples = [row[1:4] for row in CASES + REPRODUCTIONS + NEEDED + EXPLAINED]
    return triples + [(base, theirs, ours) for base, ours, theirs in triples]


def merged_with_ties_checked(triples, monkeypatch):
    """Merge each triple with DIFF3_CHECK_TIES=1: the same merges as without it (the check raises
    if a shortcut was wrong); how many had no tie broken, and were read reversed all the same."""
    plain = [diff3(*triple) for triple in triples]
    monkeypatch.setenv("DIFF3_CHECK_TIES", "1")
    assert [diff3(*triple) for triple in triples] == plain
    traces = [trace(*triple) for triple in triples]
    assert all(len(t.readings) == 2 for t in traces if t.readings)
    return sum(t.tied == (False, False) for t in traces if t.readings)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_tie_shortcut_holds_on_every_bench_shape(shape, monkeypatch):
    cases = [generate(shape, seed) for seed in range(300)]
    triples = [(c.base, c.ours, c.theirs) for c in cases] + [(c.base, c.theirs, c.ours) for c in cases]
    assert merged_with_ties_checked(triples, monkeypatch) > 100


def test_the_tie_shortcut_holds_on_every_reproduction(monkeypatch):
    assert merged_with_ties_checked(every_reproduction(), monkeypatch) > 50


def test_the_tie_check_is_off_by_default_and_catches_an_unreported_tie(monkeypatch):
    base, ours, theirs = "a\nb\nc\n", "a\nc\n", "b\na\nc\n"  # step 5's worked case: theirs' diff breaks a tie
    assert len(trace(base, "a\nB\nc\n", theirs).readings) == 2
    assert len(trace(base, "a\nB\nc\n", "a\nb\nC\n").readings) == 1  # no tie: read once
    plain_diff = diff3_module._diff
    monkeypatch.setattr(diff3_module, "_diff", lambda a, b: (plain_diff(a, b)[0], False))
    assert diff3(base, ours, theirs) == Merge("a\nc\n", False)  # the shortcut, misled, loses theirs' move
    monkeypatch.setenv("DIFF3_CHECK_TIES", "1")
    with pytest.raises(AssertionError, match="DIFF3_CHECK_TIES: no diff broke a tie, yet the readings' groups differ"):
        diff3(base, ours, theirs)


def patched(base, hunks, side):
    """Base's lines with each hunk ((first, last) of base, (first, last) of the side, from 1) applied."""
    out, pos = [], 0
    for (base_first, base_last), (first, last) in hunks:
        out += base[pos:base_first - 1] + side[first - 1:last]
        pos = base_last
    return out + base[pos:]


def named(first_last):
    """Base lines (first, last), from 1, in explain()'s words."""
    first, last = first_last
    if last < first:
        return f"the place after base line {last}" if last else "the start of base"
    return f"base line {first}" if first == last else f"base lines {first}-{last}"


def check_trace(base, ours, theirs):
    """What trace() says of a merge agrees with the texts and with what diff3 and explain() give."""
    t = trace(base, ours, theirs)
    merged, conflict = diff3(base, ours, theirs)
    b, o, th = map(split_lines, (base, ours, theirs))
    assert len(t.readings) == (1 + any(t.tied) if t.readings else 0)
    for reading in t.readings:
        assert [patched(b, hunks, lines) for lines, hunks in zip((o, th), reading.hunks)] == [o, th]
        # One change a hunk, at the hunk's place, but a framed insertion at its one place after a blank line.
        hunk_places = [(side, hunk[0]) for side, hunks in zip(("ours", "theirs"), reading.hunks) for hunk in hunks]
        assert len(reading.changes) == len(hunk_places)
        assert all((c.side, c.base) in hunk_places for c in reading.changes if not c.framed)
        assert all(c.base[1] < c.base[0] for c in reading.changes if c.framed)  # an insertion
        assert all(c.span[0] <= c.base[0] and c.base[1] <= c.span[1] for c in reading.changes)
        assert all(g.clean in (None, g.ours, g.theirs) for g in reading.groups)  # step 3: one side's text
        for g in reading.groups:  # a reason names its group's base lines, counted as the texts are (reversed too)
            assert not g.why or g.why.endswith("(rule step 4)") or "removed every line" in g.why \
                or re.search(re.escape(named(g.base)) + "[ ,]", g.why), (g, reading.reversed)
    for d in t.doubts:  # step 5: clean where both readings write alike, else one conflict
        alike = d.forward is not None and d.forward == d.reversed
        step5 = [g for g in t.blocks if g.base[0] <= d.base[0] and d.base[1] <= g.base[1] and "(rule step 5)" in g.why]
        assert bool(step5) != alike, (base, ours, theirs)
    assert [g.why for g in t.blocks if g.clean is None] == [c.why for c in explain(base, ours, theirs)]
    if t.blocks and not conflict and all(text.endswith("\n") for text in (base, ours, theirs) if text):
        written, pos = [], 0
        for g in t.blocks:
            written += b[pos:g.base[0] - 1] + g.clean
            pos = g.base[1]
        assert "".join(written + b[pos:]) == merged
    return t


@pytest.mark.parametrize("shape", SHAPES)
def test_trace_is_the_merge_step_by_step(shape):
    for seed in range(150):
        case = generate(shape, seed)
        check_trace(case.base, case.ours, case.theirs)
        check_trace(case.base, case.theirs, case.ours)


def test_trace_of_each_reproduction():
    traces = [check_trace(*triple) for triple in every_reproduction()]
    assert sum(len(t.readings) == 2 for t in traces) > 5 and sum(bool(t.doubts) for t in traces) > 5
    assert trace("a\n", "a\n", "b\n") == trace("a\n", "b\n", "b\n") == ((False, False), [], [], [])
    with pytest.raises(TypeError, match="ours"):
        trace("a\n", None, "b\n")


def test_a_reversed_readings_reasons_count_the_lines_as_they_are():
    # Theirs moves "b" up (a tie: rule step 5 reads the texts reversed too); both sides change "d".
    t = trace("a\nb\nc\nd\ne\n", "a\nc\nX\ne\n", "b\na\nc\nY\ne\n")
    assert [[(g.base, g.why) for g in reading.groups if g.clean is None] for reading in t.readings] == \
        [[((4, 4), "both sides changed base line 4 (rule step 3)")]] * 2


def test_cli_trace_on_stderr_leaves_the_merge_and_exit_code(files, capsysbinary):
    for base, ours, theirs in [("a\nb\nc\n", "a\nc\n", "b\na\nc\n"), CASES_BY_NAME["different change"][1:4],
                               NEEDED[2][1:4], EXPLAINED[-1][1:4]]:
        p = files(ours=ours, base=base, theirs=theirs)
        args = [p["ours"], p["base"], p["theirs"]]
        code = main(args)
        plain = capsysbinary.readouterr()
        assert main(args + ["--trace"]) == code
        traced = capsysbinary.readouterr()
        assert traced.out == plain.out and plain.err == b""
        lines = traced.err.decode().splitlines()
        assert lines[0].startswith("mark-diff3: trace (lines counted from 1;")
        blocks = [line for line in lines if line.startswith("block: ")]
        assert len(blocks) == len(trace(base, ours, theirs).blocks)
    assert lines[1:3] == ["the texts as they are:", "  ours' hunks: base lines 2-3 became the place after ours' line 1; "
                          "the place after base line 4 became ours' lines 3-4"]
    p = files(ours="a\nc\n", base="a\nb\nc\n", theirs="b\na\nc\n")
    assert main([p["ours"], p["base"], p["theirs"], "--trace", "--explain"]) == 1
    err = capsysbinary.readouterr().err.decode()
    assert "\nthe texts reversed (rule step 5):\n  ours' hunks: base line 2 became the place after ours' line 1\n" in err
    assert "\ndoubt: base lines 1-2, between the start of base and firm line 3: as they are clean, writes ['a\\n']; " \
           "reversed clean, writes ['b\\n', 'a\\n']\nblock: base lines 1-2: a conflict: base lines 1-2 hold " in err
    assert err.endswith("\nmark-diff3: lines 1-4: base lines 1-2 hold look-alike lines the diff can pair two ways, "
                        "and the two ways merge differently (rule step 5)\n")
    # A new section after a list, its last line blank, set after base's blank line: a framed change.
    p = files(ours="* a\n* b\n* new\n\n## Next\n", base="* a\n* b\n\n## Next\n", theirs="* a\n* b\n\n## Mid\n\n## Next\n")
    assert main([p["ours"], p["base"], p["theirs"], "--trace"]) == 0
    assert "\n  change of theirs: the place after base line 3, spanning base line 3, framed: set at its one place " \
           "after a blank line (step 1)\n" in capsysbinary.readouterr().err.decode()
