"""Test and bench helpers: merge cases whose intended result is known (for
test_diff3.py and bench.py), and the sectioned documents, writers and
threads that demo.py, the end-to-end tests and bench.py use.

    >>> from testkit import generate
    >>> case = generate("sections", seed=1)
    >>> case.shape, case.intended is None or case.intended.startswith("# ")
    ('sections', True)

Each case is a base document and two sides made by applying edit scripts
to it at known places, so the merge a person intends is known without
asking any merge tool.  An edit script says, per side, what becomes of each
base line (kept, replaced, deleted) and what is inserted before or after
which line.  `compose` lays both scripts over the base; where they meet
(both change one line differently, or both insert different text at one
point, or one inserts next to one of several equal lines that the other
deletes) no merge is right but a conflict, and `intended` is None.  Text
inserted next to a unique line the other side deletes keeps its place
between the two base lines.

The shapes:

* sections:   markdown with headings, paragraphs and lists; edits of lines,
              new list items, new and deleted sections, some made by both;
* checklist:  "- [ ] todo" boxes, few distinct lines; ticks, new and deleted boxes;
* duplicated: sections that repeat word for word, edited in one copy;
* adjacent:   unique lines; the two sides edit neighbouring lines;
* lookalike:  boxes that look alike, each once; ticks can read as moves;
* ticks:      boxes of one text, a few spaced by blank lines; the sides tick different boxes;
* appended:   lists under headings (an awesome list, a changelog); one side appends
              items to a list, the other adds a section after it (or elsewhere, or
              both add sections at one place).
"""

import asyncio
import contextlib
import hashlib
import os
import random
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

SHAPES = ("sections", "checklist", "duplicated", "adjacent", "lookalike", "ticks", "appended")

WORDS = (
    "agent document merge version paragraph server client publish conflict "
    "edit section line base ours theirs change review draft note team plan"
).split()


class Case(NamedTuple):
    shape: str
    base: str
    ours: str
    theirs: str
    intended: Optional[str]  # None: the edits meet, only a conflict is right


class Script:
    """One side's edits, by base line: replaced (a list, [] deletes) or inserted around."""

    def __init__(self) -> None:
        self.fate: Dict[int, List[str]] = {}
        self.before: Dict[int, List[str]] = {}
        self.after: Dict[int, List[str]] = {}
        self.touched: set = set()  # lines this side edits or inserts next to
        self.kind = ""  # for shapes where a side makes one kind of edit

    def free(self, *lines: int) -> bool:
        """Whether this side leaves these lines and their neighbours alone so far."""
        return not any(k in self.touched for i in lines for k in (i - 1, i, i + 1))

    def replace(self, lo: int, hi: int, lines: List[str]) -> None:
        for i in range(lo, hi):
            self.fate[i] = []
            self.touched.add(i)
        self.fate[lo] = list(lines)

    def insert(self, where: str, i: int, lines: List[str]) -> None:
        (self.before if where == "before" else self.after)[i] = list(lines)
        self.touched.add(i)

    def apply(self, base: List[str]) -> List[str]:
        out: List[str] = []
        for i, line in enumerate(base):
            out += self.before.get(i, []) + self.fate.get(i, [line]) + self.after.get(i, [])
        return out


def compose(base: List[str], ours: Script, theirs: Script) -> Optional[List[str]]:
    """Both scripts applied to `base`, or None where they meet."""
    out: List[str] = []
    for i, line in enumerate(base):
        point = _insertions(base, ours, theirs, i)
        if point is None:
            return None
        out += point
        mine, yours = ours.fate.get(i), theirs.fate.get(i)
        if mine is not None and yours is not None and mine != yours:
            return None  # changed by both, differently (or deleted by one)
        out += mine if mine is not None else yours if yours is not None else [line]
    end = _insertions(base, ours, theirs, len(base))
    return None if end is None else out + end


def _insertions(base: List[str], ours: Script, theirs: Script, i: int) -> Optional[List[str]]:
    """What both insert at the point before base line i, or None where that is unclear.

    Text inserted beside a line the other side deletes keeps its place (the
    point between the two base lines) where that line is unique; beside one
    of several equal lines, which of them was deleted is not known.
    """
    lines = []
    for side, other in ((ours, theirs), (theirs, ours)):
        for k, table in ((i - 1, side.after), (i, side.before)):
            if table.get(k) and other.fate.get(k) == [] and base.count(base[k]) > 1:
                return None
        lines.append(side.after.get(i - 1, []) + side.before.get(i, []))
    if lines[0] and lines[1] and lines[0] != lines[1]:
        return None
    return lines[0] or lines[1]


def generate(shape: str, seed: int) -> Case:
    """The case of `shape` made from `seed`: the same seed gives the same case."""
    rng = random.Random(f"{shape}-{seed}")
    while True:
        base, ours, theirs = _scripts(rng, shape)
        # In "lookalike" a side's ticks may swap two lines (a move, read as a text); the
        # ticks are what the side did, so the intended merge is still known.
        moved = shape != "lookalike" and (_moves(base, ours) or _moves(base, theirs))
        # In "ticks" both sides rewrite equal boxes; a tick keeps its line where it is, so
        # the texts show which boxes each side ticked, and the sides are not twins.
        if not (moved or shape != "ticks" and _twins(base, ours, theirs)):
            break
    intended = compose(base, ours, theirs)
    return Case(shape, _text(base), _text(ours.apply(base)), _text(theirs.apply(base)),
                None if intended is None else _text(intended))


def _scripts(rng: random.Random, shape: str):
    base = _BASES[shape](rng)
    ours, theirs = Script(), Script()
    editor = _EDITORS[shape]
    if shape in ("adjacent", "ticks", "appended"):
        editor(rng, base, ours, theirs)
    else:
        for _ in range(rng.randint(1, 3)):
            for side in (ours, theirs):
                editor(rng, base, side)
        if rng.random() < 0.3:  # one edit made by both sides alike
            both = Script()
            both.kind = ours.kind
            editor(rng, base, both)
            for side in (ours, theirs):
                if side.kind in ("", both.kind) and all(side.free(i) for i in both.touched):
                    _merge_into(side, both)
    return base, ours, theirs


def _twins(base: List[str], ours: Script, theirs: Script) -> bool:
    """Whether the sides delete, or insert, equal lines at different places.

    Both texts then look as if one change was made twice; no merge can
    tell it from the same change made by both.
    """
    def removed(side: Script) -> set:
        return {(base[i], i) for i, lines in side.fate.items() if base[i] not in lines}

    def added(side: Script) -> set:
        return {(line, i, where) for where, table in (("before", side.before), ("after", side.after))
                for i, lines in table.items() for line in lines}

    for made in (removed, added):
        mine, yours = made(ours), made(theirs)
        if {m[0] for m in mine - yours} & {y[0] for y in yours - mine}:
            return True
    return False


def _moves(base: List[str], side: Script) -> bool:
    """Whether a side deletes a text line and inserts its copy: a move no text can show."""
    removed = {base[i] for i, lines in side.fate.items() if base[i] and base[i] not in lines}
    added = {line for lines in [*side.fate.values(), *side.before.values(), *side.after.values()]
             for line in lines}
    return bool(removed & added)


def _merge_into(side: Script, extra: Script) -> None:
    side.fate.update(extra.fate)
    side.before.update(extra.before)
    side.after.update(extra.after)
    side.touched |= extra.touched


def _text(lines: List[str]) -> str:
    return "".join(line + "\n" for line in lines)


# ------------------------------------------------------------------ bases

def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))).capitalize() + "."


def _section_lines(rng: random.Random, heading: str) -> List[str]:
    if rng.random() < 0.4:
        body = [f"- {_sentence(rng)}" for _ in range(rng.randint(1, 4))]
    else:
        body = [_sentence(rng) for _ in range(rng.randint(1, 3))]
    if rng.random() < 0.3:  # the lines markdown repeats: a rule, a stock item
        body.append(rng.choice(["---", "- TODO", "See above."]))
    return [heading, ""] + body


def _sections_base(rng: random.Random, duplicated: bool = False) -> List[str]:
    lines = ["# Title", ""]
    sections: List[List[str]] = []
    for k in range(rng.randint(2, 6)):
        if duplicated and sections and rng.random() < 0.5:
            sections.append(list(rng.choice(sections)))  # word for word again
        else:
            heading = rng.choice([f"## Part {k}", "## Notes", "## Example"])
            sections.append(_section_lines(rng, heading))
    for k, section in enumerate(sections):
        lines += section + ([""] if k < len(sections) - 1 else [])
    return lines


def _checklist_base(rng: random.Random) -> List[str]:
    spaced = rng.random() < 0.5
    lines: List[str] = []
    for _ in range(rng.randint(3, 12)):
        lines.append(rng.choice(["- [ ] todo", "- [ ] todo", "- [x] todo", "- [ ] call"]))
        if spaced:
            lines.append("")
    return lines[:-1] if spaced else lines


def _lookalike_base(rng: random.Random) -> List[str]:
    """Boxes that look alike, each once: "- [ ] todo" and "- [x] todo", say, so that a
    side's ticks can read as lines that moved (issue 37)."""
    words = rng.sample(["todo", "review", "call", "ship", "test"], rng.randint(2, 4))
    boxes = [f"- [{mark}] {word}" for word in words for mark in " x" if rng.random() < 0.75] or ["- [ ] todo"]
    rng.shuffle(boxes)
    if rng.random() < 0.3:
        boxes = [line for box in boxes for line in (box, "")][:-1]
    return boxes


def _ticks_base(rng: random.Random) -> List[str]:
    """Boxes with one text, a few ticked (two at least not); blank lines between them in a few
    cases (issue 41)."""
    boxes = ["- [ ] todo"] * 2 + [rng.choice(["- [ ] todo"] * 4 + ["- [x] todo"]) for _ in range(rng.randint(1, 10))]
    rng.shuffle(boxes)
    if rng.random() < 0.15:
        boxes = [line for box in boxes for line in (box, "")][:-1]
    return boxes


def _appended_base(rng: random.Random) -> List[str]:
    """Lists under headings: an awesome list, or a changelog (issue 41); a bare list first
    in some, the items spaced by blank lines in a few."""
    lines = ["# Changelog" if rng.random() < 0.3 else "# Title", ""]
    spaced = rng.random() < 0.15
    bullet = rng.choice(["* ", "- "])
    for k in range(rng.randint(1, 4)):
        if k or rng.random() < 0.7:
            lines += [rng.choice([f"## Part {k}", "## Unreleased", f"## 1.{k}.0"]), ""]
        items = [bullet + _sentence(rng) for _ in range(rng.randint(1, 4))]
        lines += [line for item in items for line in (item, "")][:-1] if spaced else items
        lines.append("")
    return lines[:-1]


def _adjacent_base(rng: random.Random) -> List[str]:
    return [f"line {k}: {_sentence(rng)}" for k in range(rng.randint(3, 12))]


_BASES = {
    "sections": _sections_base,
    "duplicated": lambda rng: _sections_base(rng, duplicated=True),
    "checklist": _checklist_base,
    "adjacent": _adjacent_base,
    "lookalike": _lookalike_base,
    "ticks": _ticks_base,
    "appended": _appended_base,
}


# ------------------------------------------------------------------ edits

def _new(rng: random.Random, what: str) -> str:
    """A line no other line equals: `what` and a random tag."""
    return f"{what} {rng.getrandbits(40):010x}"


def _sections_edit(rng: random.Random, base: List[str], side: Script) -> None:
    """One edit a writer makes to a markdown document, where this side is free."""
    text = [i for i, line in enumerate(base) if line and not line.startswith("#") and side.free(i)]
    headings = [i for i, line in enumerate(base) if line.startswith("## ") and side.free(i)]
    items = [i for i in text if base[i].startswith("- ")]
    roll = rng.random()
    if roll < 0.35 and text:
        i = rng.choice(text)
        side.replace(i, i + 1, [base[i].rstrip(".") + f" ({_new(rng, 'edit')})."])
    elif roll < 0.5 and items:
        side.insert("after", rng.choice(items), [f"- {_new(rng, 'item')}"])
    elif roll < 0.6 and text:
        side.insert("after", rng.choice(text), [_new(rng, "Sentence") + "."])
    elif roll < 0.75 and headings:
        side.insert("before", rng.choice(headings), [f"## {_new(rng, 'New')}", "", _new(rng, "Text"), ""])
    elif roll < 0.8 and side.free(len(base) - 1):
        side.insert("after", len(base) - 1, ["", f"## {_new(rng, 'End')}", "", _new(rng, "Text")])
    elif roll < 0.9 and headings:
        lo = rng.choice(headings)
        nxt = [i for i, line in enumerate(base) if i > lo and line.startswith("## ")]
        hi = nxt[0] if nxt else len(base)
        if side.free(*range(lo, hi)):
            # A whole section and the blank line after it, or before it at the end.
            side.replace(lo - (0 if nxt else 1), hi, [])
    elif headings:
        i = rng.choice(headings)
        side.replace(i, i + 1, [base[i] + f" ({_new(rng, 'renamed')})"])


def _checklist_edit(rng: random.Random, base: List[str], side: Script) -> None:
    """Tick, add or delete a box.  A side sticks to one kind: among equal boxes,
    deleting one and adding another elsewhere reads as a tick."""
    boxes = [i for i, line in enumerate(base) if line and side.free(i)]
    if not boxes:
        return
    i = rng.choice(boxes)
    side.kind = side.kind or rng.choice(["tick", "tick", "add", "delete"])
    if side.kind == "tick":
        ticked = base[i].replace("[ ]", "[x]") if "[ ]" in base[i] else base[i].replace("[x]", "[ ]")
        side.replace(i, i + 1, [ticked])
    elif side.kind == "add":
        box = rng.choice(["- [ ] todo", f"- [ ] {_new(rng, 'task')}"])
        side.insert("after", i, ["", box] if "" in base else [box])
    elif "" in base and i + 1 < len(base) and side.free(i + 1):
        side.replace(i, i + 2, [])  # the box and its blank line
    elif "" not in base:
        side.replace(i, i + 1, [])


def _adjacent_edit(rng: random.Random, base: List[str], ours: Script, theirs: Script) -> None:
    """Ours and theirs edit neighbouring lines: replace or insert, in either order."""
    i = rng.randrange(len(base) - 1)
    first, second = (ours, theirs) if rng.random() < 0.5 else (theirs, ours)
    kinds = rng.choice([("replace", "replace"), ("replace", "insert"), ("insert", "replace"),
                        ("replace", "delete"), ("delete", "replace"), ("delete", "insert"), ("insert", "delete")])
    for side, line, kind in ((first, i, kinds[0]), (second, i + 1, kinds[1])):
        if kind == "replace":
            side.replace(line, line + 1, [_new(rng, "changed") for _ in range(rng.randint(1, 2))])
        elif kind == "delete":
            side.replace(line, line + 1, [])
        else:
            side.insert("after" if side is first else "before", line, [_new(rng, "inserted")])


def _ticks_edit(rng: random.Random, base: List[str], ours: Script, theirs: Script) -> None:
    """Each side ticks one to three boxes, none the other ticks."""
    boxes = [i for i, line in enumerate(base) if "[ ]" in line]
    rng.shuffle(boxes)
    for side, spare in ((ours, 1), (theirs, 0)):  # (ours leaves theirs a box)
        for i in [boxes.pop() for _ in range(min(rng.randint(1, 3), len(boxes) - spare))]:
            side.replace(i, i + 1, [base[i].replace("[ ]", "[x]")])


def _appended_edit(rng: random.Random, base: List[str], ours: Script, theirs: Script) -> None:
    """One side appends items to a list, the other adds a section after it (after another
    list in some cases); in a few cases both add a section after one list."""
    bullet = ("* ", "- ")
    ends = [i for i, line in enumerate(base)  # the last item of each list
            if line[:2] in bullet and not any(later[:2] in bullet for later in base[i + 1:i + 3])]
    spaced = any(not base[i] and base[i - 1][:2] in bullet and base[i + 1][:2] in bullet
                 for i in range(1, len(base) - 1))
    appender, sectioner = (ours, theirs) if rng.random() < 0.5 else (theirs, ours)
    end = rng.choice(ends[:-1] if len(ends) > 1 and rng.random() < 0.8 else ends)  # (at the end: one place)
    if rng.random() < 0.9:
        items = [base[end][:2] + _new(rng, "item") for _ in range(rng.randint(1, 2))]
        appender.insert("after", end, [line for item in items for line in ("", item)] if spaced else items)
        _add_section(rng, base, sectioner, end if rng.random() < 0.8 else rng.choice(ends))
    else:
        for side in (appender, sectioner):
            _add_section(rng, base, side, end)


def _add_section(rng: random.Random, base: List[str], side: Script, end: int) -> None:
    """`side` adds a section after the list whose last item is base line `end`."""
    heading, item = "## " + _new(rng, "New"), base[end][:2] + _new(rng, "item")
    if end + 2 < len(base):  # before the next heading, its blank line after it
        side.insert("before", end + 2, [heading, "", item, ""])
    else:  # at the end, its blank line before it
        side.insert("after", end, ["", heading, "", item])


_EDITORS = {
    "sections": _sections_edit,
    "duplicated": _sections_edit,
    "checklist": _checklist_edit,
    "adjacent": _adjacent_edit,
    "lookalike": _checklist_edit,
    "ticks": _ticks_edit,
    "appended": _appended_edit,
}


# ------------------------------------------------- documents for the demo, e2e tests and bench

def sectioned_document(writers: List[str]) -> str:
    """A document with a heading and one intro line per writer's section."""
    return "# Shared notes\n\n" + "".join(f"## {w}\n\n{w}'s intro.\n\n" for w in writers)


def add_line(text: str, writer: str, line: str) -> str:
    """`text` with `line` appended at the end of `writer`'s section."""
    lines = text.split("\n")
    start = lines.index(f"## {writer}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    while lines[end - 1] == "":  # insert before the blank lines that close the section
        end -= 1
    return "\n".join(lines[:end] + [line] + lines[end:])


def replace_line(text: str, old: str, new: str) -> str:
    return text.replace(f"\n{old}\n", f"\n{new}\n", 1)


def section_of(text: str, writer: str) -> str:
    """`writer`'s section of a sectioned document: its heading line up to the next "## " heading."""
    start = text.index(f"## {writer}\n")
    return text[start:text.find("\n## ", start) + 1 or len(text)]


def section_publish(writer: str) -> Callable:
    """A `publish` for write_rounds that sends `writer`'s section only, with update_section."""
    from mark_sections import update_section

    def publish(client, path: str, body: str, version: int):
        return update_section(client, path, f"## {writer}", section_of(body, writer), expected_version=version)

    return publish


def write_rounds(client, path: str, writer: str, rounds: int, publish) -> List[Tuple[str, object, float]]:
    """`writer` adds `rounds` lines to its own section of `path`, one a publish.

    Each body goes out as `publish(client, path, body, version)`, which
    returns a PublishResult; after one that is not ok, the writer goes on
    from the latest version.  Returns, per round: the line, the result and
    the seconds it took.
    """
    version, text = _latest(client, path)
    outcomes = []
    for n in range(rounds):
        line = f"{writer} edit {n}"
        body = add_line(text, writer, line)
        start = time.perf_counter()
        result = publish(client, path, body, version)
        outcomes.append((line, result, time.perf_counter() - start))
        if result.status == "ok":
            version, text = result.version, result.body if result.merged else body
        else:
            version, text = _latest(client, path)
    return outcomes


def _latest(client, path: str) -> Tuple[int, str]:
    """The newest version's number and body.  The real server answers a version it is still writing
    (even one it has acknowledged) as `ok` and empty: the client's `fetch(path)` then raises
    "transport" (it will not answer a document with an empty read of its version), or answers the
    document empty.  Either is asked again, up to 100 times, then raised or returned as it is."""
    from mark_client import MarkError

    for attempt in range(100):
        try:
            latest = client.fetch(path)
        except MarkError as error:
            if error.status != "transport" or attempt == 99:
                raise
            continue
        if latest.body:
            break
    return int(latest.metadata["version"]), latest.body


def together(*calls: Callable[[], object]) -> list:
    """Run the calls on threads released at the same moment; their results, in order.

    When a call raised, the first such exception is raised here, once all have ended.
    """
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)
    errors: List[BaseException] = []

    def run(index: int, call: Callable[[], object]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


# ------------------------------------------------- the real Demarkus server (../shared/real-demarkus)

REAL_DEMARKUS = Path(__file__).resolve().parent.parent / "shared" / "real-demarkus"


def inside_loopback() -> bool:
    """Whether this process runs in the loopback-only namespace of REAL_DEMARKUS/loopback."""
    return os.environ.get("MARK_LOOPBACK_NS") == "1"


@contextlib.contextmanager
def real_demarkus(folder: Path, token: str, rate_limit: Optional[int] = None) -> Iterator[str]:
    """The real demarkus-server over a new store in `folder`, on a free UDP port; yields its mark:// URL.

    `token` may publish everywhere; `rate_limit` sets DEMARKUS_RATE_LIMIT
    (None: the server's default, 50 a second; 0: off).  It listens on every
    interface, so it starts only inside the loopback namespace.
    """
    if not inside_loopback():
        raise RuntimeError(f"start the real server only inside {REAL_DEMARKUS / 'loopback'}")
    root, tokens, log_path = folder / "root", folder / "tokens.toml", folder / "demarkus.log"
    root.mkdir(parents=True)
    tokens.write_text(f'[tokens.test]\nhash = "sha256-{hashlib.sha256(token.encode()).hexdigest()}"\n'
                      'paths = ["/**"]\noperations = ["publish"]\n')
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = dict(os.environ)
    if rate_limit is not None:
        env["DEMARKUS_RATE_LIMIT"] = str(rate_limit)
    with open(log_path, "w") as log:
        server = subprocess.Popen([str(REAL_DEMARKUS / "bin" / "demarkus-server"), "-port", str(port),
                                   "-root", str(root), "-tokens", str(tokens)], stdout=log, stderr=log, env=env)
    try:
        deadline = time.monotonic() + 20
        while 'msg="server started"' not in log_path.read_text():
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"demarkus-server did not start:\n{log_path.read_text()}")
            time.sleep(0.02)  # waiting for its log line: the only sign that it is ready
        yield f"mark://127.0.0.1:{port}"
    finally:
        server.kill()  # its graceful stop waits 10 s for idle connections; the store is thrown away
        server.wait()


# ------------------------------------------------- one client against the others (test_limits.py, bench.py)

ELSEWHERE = "127.0.0.2"  # another loopback address: the caps per client address apply to it alone


def http_from(url: str, source: str) -> socket.socket:
    """A TCP connection to the HTTP server at `url`, from loopback address `source`."""
    parts = url.split("//", 1)[1].rsplit(":", 1)
    return socket.create_connection((parts[0], int(parts[1])), timeout=10, source_address=(source, 0))


class Attacker:
    """Raw QUIC connections from ELSEWHERE to a server on 127.0.0.1, on an event loop of their own."""

    def __init__(self, port: int):
        self.port = port
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.protocols = []

    def run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    def connect(self):
        from aioquic.asyncio.protocol import QuicConnectionProtocol
        from aioquic.quic.configuration import QuicConfiguration
        from aioquic.quic.connection import QuicConnection

        async def connect():
            configuration = QuicConfiguration(is_client=True, alpn_protocols=["mark"], verify_mode=ssl.CERT_NONE)
            _, protocol = await self.loop.create_datagram_endpoint(
                lambda: QuicConnectionProtocol(QuicConnection(configuration=configuration)),
                local_addr=(ELSEWHERE, 0))
            protocol.connect(("127.0.0.1", self.port))
            await protocol.wait_connected()
            return protocol

        self.protocols.append(self.run(connect()))
        return self.protocols[-1]

    def open(self, protocol, data: bytes, end: bool = False) -> int:
        """A stream that sends `data` (and ends only with `end`); its id."""
        async def open_stream():
            stream = protocol._quic.get_next_available_stream_id()
            protocol._quic.send_stream_data(stream, data, end_stream=end)
            protocol.transmit()
            return stream

        return self.run(open_stream())

    def request(self, protocol, data: bytes) -> bytes:
        """A whole request on a stream of its own: the whole answer."""
        async def request():
            reader, writer = await protocol.create_stream()
            writer.write(data)
            writer.write_eof()
            return await reader.read()

        return self.run(request())

    def reset(self, protocol, stream: int) -> None:
        async def reset():
            protocol._quic.reset_stream(stream, 0)
            protocol.transmit()

        self.run(reset())

    def close(self):
        async def close():
            for protocol in self.protocols:
                protocol.close()

        self.run(close())
        self.loop.call_soon_threadsafe(self.loop.stop)
