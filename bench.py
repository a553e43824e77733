"""Benchmarks: performance claims are made here, never in a timed test.

    python bench.py diff3     # diff3() against `git merge-file -p` and breezy's merge3 (pip install merge3), same run
    python bench.py shapes    # how often each merges clean and right, clean and wrong, or conflicts
    python bench.py publish   # the merge publish loop against the reference server
    python bench.py real      # the same against the real demarkus-server (../shared), rate limit on and off
    python bench.py crash     # kill -9 the server mid-write: acknowledged versions lost, documents wedged
    python bench.py limits    # what one client can take of the reference server from the others

Every scenario is built from a fixed seed, so two runs measure the same work.
Times are medians of several runs (minimums for diff3 and git); the machine
is shared and noisy, so compare ratios measured in one run rather than
absolute figures across runs.
"""

import argparse
import collections
import hashlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

from diff3 import diff3, get_hunks, split_lines
from mark_publish import MarkClient, MarkError, PublishResult, mark_publish
from mark_server import serve
from testkit import (ELSEWHERE, REAL_DEMARKUS, SHAPES, Attacker, generate, http_from, inside_loopback, real_demarkus,
                     section_publish, sectioned_document, together, write_rounds)

WORDS = (
    "agent document merge version paragraph server client publish conflict "
    "edit section line base ours theirs change review draft note team plan "
    "the a of to and in is for on with as by at from that this it be are was"
).split()


# ------------------------------------------------------------- scenarios

def prose(size: int, rng: random.Random) -> list:
    """Markdown lines of about `size` bytes: headings, paragraphs, lists, blank lines."""
    lines, total, section = [], 0, 0
    while total < size:
        if section % 4 == 0:
            block = [f"## Section {section}", ""]
        else:
            block = []
        if rng.random() < 0.3:
            block += [f"- {sentence(rng, 6)}" for _ in range(rng.randint(2, 5))]
        else:
            block += [sentence(rng, 12) for _ in range(rng.randint(2, 6))]
        block.append("")
        section += 1
        lines += block
        total += sum(len(line) + 1 for line in block)
    return lines


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def text_lines(lines: list) -> list:
    """Indices of lines holding text (not blank, not headings): the ones edits touch."""
    return [i for i, line in enumerate(lines) if line and not line.startswith("#")]


def edited(lines: list, indices, tag: str) -> str:
    out = list(lines)
    for i in indices:
        out[i] = f"{out[i]} ({tag} edit {i})"
    return "\n".join(out) + "\n"


def scenarios(size: int, name: str):
    """Yield (label, base, ours, theirs) for the prose classes at one size."""
    rng = random.Random(size)
    lines = prose(size, rng)
    base = "\n".join(lines) + "\n"
    candidates = text_lines(lines)
    edits = max(2, size // 2048)
    spots = []  # text lines at least three apart, so each edit stands alone
    for i in sorted(rng.sample(candidates[:-1], min(edits * 3, len(candidates) - 1))):
        if not spots or i - spots[-1] >= 3:
            spots.append(i)
    spots = spots[:edits * 2]
    ours_spots, theirs_spots = spots[0::2], spots[1::2]
    theirs = edited(lines, theirs_spots, "theirs")
    text = set(candidates)
    yield f"scattered {name}", base, edited(lines, ours_spots, "ours"), theirs
    adjacent = [i for i in spots[:edits] if i + 1 in text]
    yield (f"adjacent {name}", base, edited(lines, adjacent, "ours"),
           edited(lines, [i + 1 for i in adjacent], "theirs"))
    yield (f"overlapping {name}", base, edited(lines, spots[:edits], "ours"),
           edited(lines, spots[:edits], "theirs"))
    rewrite = [sentence(rng, 12) if i in text else line for i, line in enumerate(lines)]
    yield f"full rewrite {name}", base, "\n".join(rewrite) + "\n", theirs
    headings = [i for i, line in enumerate(lines) if line.startswith("## ")]
    first, second = headings[len(headings) // 3], headings[2 * len(headings) // 3]
    after = headings[headings.index(second) + 1] if second != headings[-1] else len(lines)
    new_section = ["## New section", ""] + [sentence(rng, 12) for _ in range(5)] + [""]
    yield (f"section in, another out {name}", base, "\n".join(lines[:first] + new_section + lines[first:]) + "\n",
           "\n".join(lines[:second] + lines[after:]) + "\n")
    moved = lines[:first] + lines[second:after] + lines[first:second] + lines[after:]
    yield f"moved sections {name}", base, "\n".join(moved) + "\n", theirs
    crlf = [text.replace("\n", "\r\n") for text in (base, edited(lines, ours_spots, "ours"), theirs)]
    yield (f"CRLF scattered {name}", *crlf)


def docs_prose(size: int) -> list:
    """About `size` bytes of real prose: the docstrings of this Python's standard library,
    file by file in sorted order (the same on every machine with this Python), each
    cleaned as help() shows it and followed by a blank line."""
    import ast
    import inspect
    import sysconfig
    lines, total = [], 0
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).rglob("*.py")):
        if "test" in path.parts or "site-packages" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    block = inspect.cleandoc(doc).split("\n") + [""]
                    lines += block
                    total += sum(len(line) + 1 for line in block)
                    if total >= size:
                        return lines
    return lines


def rewritten_paragraphs(size: int, name: str):
    """Yield (label, base, ours, theirs) for real prose (`docs_prose`) with a paragraph
    rewritten on each side about once per 8 KiB, ours' and theirs' 4 KiB apart: its
    words, a few changed, wrapped anew to another width, so every line is new; then
    the same with CRLF, and each side alone against base."""
    import textwrap
    rng = random.Random(size)
    lines = docs_prose(size)
    paragraphs, start = [], 0  # (lo, hi) of each run of non-blank lines
    for i, line in enumerate(lines + [""]):
        if not line.strip():
            if i > start:
                paragraphs.append((start, i))
            start = i + 1
    ours, theirs = list(lines), list(lines)
    byte_at = [0]  # byte_at[i]: where line i starts
    for line in lines:
        byte_at.append(byte_at[-1] + len(line) + 1)
    due = [4 << 10, 8 << 10]  # the byte offset from which ours, theirs rewrite their next paragraph
    rewrites: dict = {0: [], 1: []}
    for lo, hi in paragraphs:
        side = 0 if due[0] <= due[1] else 1
        if byte_at[lo] >= due[side]:
            rewrites[side].append((lo, hi))
            due[side] += 8 << 10
    for side, text in ((0, ours), (1, theirs)):
        for lo, hi in reversed(rewrites[side]):
            words = " ".join(lines[lo:hi]).split()
            words = [rng.choice(WORDS) if rng.random() < 0.1 else word for word in words]
            text[lo:hi] = textwrap.wrap(" ".join(words), width=rng.choice([50, 60, 90])) or ["(rewritten)"]
    join = "\n".join
    texts = [join(lines) + "\n", join(ours) + "\n", join(theirs) + "\n"]
    yield (f"docs, paragraphs rewritten {name}", *texts)
    yield (f"docs, CRLF {name}", *(text.replace("\n", "\r\n") for text in texts))
    yield (f"docs, ours == base {name}", texts[0], texts[0], texts[2])
    yield (f"docs, theirs == base {name}", texts[0], texts[1], texts[0])


def few_distinct(size: int, name: str):
    """About `size` bytes of blank lines and `- [ ] todo`, and two sets of ticked boxes.

    Ours and theirs tick boxes at least 40 lines apart, so the merge is
    clean by construction, and as fine as git's only if the diff finds them.
    """
    pattern = ["- [ ] todo", "- [ ] todo", "", "- [ ] todo", ""]
    lines = (pattern * (size // sum(len(x) + 1 for x in pattern) + 1))
    rng = random.Random(7)
    spots = sorted(rng.sample(range(0, len(lines) // 40), 100 * max(1, size >> 20)))
    ticks = [40 * s + s % 2 for s in spots if lines[40 * s + s % 2]]
    ours, theirs = list(lines), list(lines)
    for n, i in enumerate(ticks):
        (ours if n % 2 else theirs)[i] = "- [x] todo"
    join = "\n".join
    return f"few distinct lines {name}", join(lines) + "\n", join(ours) + "\n", join(theirs) + "\n"


def random_ticks(size: int, name: str, both: bool = False):
    """About `size` bytes of a checklist ticked at random, and ours ticked at random anew.

    Beyond the classes above: no line is unique and nearly every line may
    pair with any other, so no pairing is certain and the change theirs
    makes meets ours as one conflict.  With `both`, theirs re-ticks it too:
    thousands of changes on each side, every zone meeting every other.
    """
    rng = random.Random(5)
    boxes = ["- [ ] todo", "- [x] todo"]
    n = size // 11
    base = [rng.choice(boxes) for _ in range(n)]
    ours = [rng.choice(boxes) for _ in range(n)]
    theirs = [rng.choice(boxes) for _ in range(n)] if both else base[:n // 2] + ["- [ ] new"] + base[n // 2 + 1:]
    join = "\n".join
    label = f"{'both re-tick' if both else 'random ticks'} {name}"
    return label, join(base) + "\n", join(ours) + "\n", join(theirs) + "\n"


def added_everywhere(size: int, name: str):
    """About `size` bytes of unique lines, and both sides add the same line after half of
    them, ours after the even ones and theirs after the odd: tens of thousands of changes
    on each side adding a line the merge would hold more often than either: all conflicts."""
    base = [f"line {i}" for i in range(size // 11)]
    ours = [line for i, x in enumerate(base) for line in ([x, "added"] if i % 2 == 0 else [x])]
    theirs = [line for i, x in enumerate(base) for line in ([x, "added"] if i % 2 else [x])]
    join = "\n".join
    return f"a line added everywhere {name}", join(base) + "\n", join(ours) + "\n", join(theirs) + "\n"


# ------------------------------------------------------------ measuring

def long_checklist(name: str):
    """Issue 37's checklist: 2,400 lines of equal boxes and blank lines, no line once in
    base, each side ticking two far-apart boxes with a note: clean by construction."""
    base = ["- [ ] todo", ""] * 1200
    ours, theirs = list(base), list(base)
    for side, spots in ((ours, (300, 1500)), (theirs, (800, 2100))):
        for i in spots:
            side[i] = f"- [x] todo {i}"
    join = "\n".join
    return f"2,400-line checklist {name}", join(base) + "\n", join(ours) + "\n", join(theirs) + "\n"


def merge3_lines(base: str, ours: str, theirs: str) -> str:
    """breezy's merge3 (the one-sitting anchor) on the same texts, as its README calls it."""
    import merge3
    return "".join(merge3.Merge3(base.splitlines(True), ours.splitlines(True), theirs.splitlines(True))
                   .merge_lines(name_a="ours", name_b="theirs"))


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def conflicts(text: str) -> str:
    """Conflict blocks in a merge result and the lines inside them, as "blocks/lines"."""
    blocks = lines = 0
    inside = False
    for line in text.split("\n"):
        if line.startswith("<<<<<<< "):
            blocks, inside = blocks + 1, True
        elif line.startswith(">>>>>>> "):
            inside = False
        else:
            lines += inside
    return f"{blocks}/{lines}"


def bench_diff3(args) -> None:
    git = shutil.which("git")
    cases = []
    for size, name in ((4 << 10, "4 KiB"), (64 << 10, "64 KiB"), (1 << 20, "1 MiB"), (10 << 20, "10 MiB")):
        cases += list(scenarios(size, name))
    cases += list(rewritten_paragraphs(1 << 20, "1 MiB"))
    for size, name in ((1 << 20, "1 MiB"), (10 << 20, "10 MiB")):  # adversarial: x1M against git's
        cases += [few_distinct(size, name), random_ticks(size, name), added_everywhere(size, name)]
    cases += [random_ticks(64 << 10, "64 KiB"), random_ticks(256 << 10, "256 KiB", both=True), long_checklist("16 KiB")]
    if args.only:  # (x1M needs the class's 1 MiB row in the same run)
        cases = [case for case in cases if any(text in case[0] for text in args.only)]
    try:
        import merge3  # noqa: F401 (a dev tool: the column is "-" without it)
        with_merge3 = True
    except ImportError:
        with_merge3 = False
    header = (f"{'scenario':34} {'KiB':>6} {'diff3 ms':>9} {'2-way ms':>8} {'git ms':>8} {'ratio':>6} {'x1M':>5} "
              f"{'git x1M':>7} {'merge3 ms':>9} {'m3/d3':>6} {'peak/in':>7} {'conflicts':>10} {'git':>10}")
    print(header)
    print("-" * len(header))
    best, git_best = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, base, ours, theirs in cases:
            paths = []
            for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
                path = Path(tmp, name)
                path.write_bytes(text.encode("utf-8"))
                paths.append(str(path))
            command = [git, "merge-file", "-p", *paths] if git else None
            # The machine's speed drifts over seconds, so both are timed in
            # alternating rounds.  Each round starts with an untimed diff3
            # call: the git processes in between leave its caches colder
            # than an in-process caller has them.  git is waited for as a
            # process is (subprocess.run, no timeout, so nothing polls).
            rounds = max(1, args.rounds // 2) if "10 MiB" in label else args.rounds
            ours_times, git_times, two_way_times = [], [], []
            for _ in range(rounds):
                diff3(base, ours, theirs)
                ours_times += [timed(lambda: diff3(base, ours, theirs)) for _ in range(3)]
                two_way_times.append(timed(lambda: two_way(base, ours, theirs)))
                git_times += [timed(lambda: subprocess.run(command, capture_output=True))
                              for _ in range(3 if command else 0)]
            ours_ms = best[label] = 1000 * min(ours_times)
            merge3_cell = ratio3_cell = "-"
            if with_merge3 and "10 MiB" not in label and "everywhere" not in label:  # (hours there)
                merge3_ms = 1000 * min(timed(lambda: merge3_lines(base, ours, theirs)) for _ in range(3))
                merge3_cell, ratio3_cell = f"{merge3_ms:9.1f}", f"{merge3_ms / ours_ms:6.1f}"
            growth_cell, git_growth_cell = growth(best, label, 5), "-"
            tracemalloc.start()
            merged, _ = diff3(base, ours, theirs)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            size = sum(len(t.encode()) for t in (base, ours, theirs))
            git_cell = ratio_cell = git_conflicts = "-"
            if command:
                git_ms = git_best[label] = 1000 * min(git_times)
                git_growth_cell = growth(git_best, label, 7)
                git_out = subprocess.run(command, capture_output=True).stdout.decode()
                git_cell, ratio_cell = f"{git_ms:8.1f}", f"{ours_ms / git_ms:6.2f}"
                git_conflicts = conflicts(git_out)
            two_way_ms = 1000 * min(two_way_times)
            print(f"{label:34} {len(base.encode()) / 1024:6.0f} {ours_ms:9.1f} {two_way_ms:8.1f} {git_cell:>8} "
                  f"{ratio_cell:>6} {growth_cell:>5} {git_growth_cell:>7} {merge3_cell:>9} {ratio3_cell:>6} {peak / size:7.1f} "
                  f"{conflicts(merged):>10} {git_conflicts:>10}", flush=True)
    print(f"""
minimum of {3 * args.rounds} runs each ({3 * max(1, args.rounds // 2)} at 10 MiB), in alternating rounds;
2-way = the part of diff3 before any merging: splitting the three texts, diffing base against each;
ratio = diff3 in-process / git merge-file -p as a process;
x1M = diff3 time at 10 MiB / its time for the same class at 1 MiB (10x the input); git x1M, git's;
merge3 = breezy's merge3 in-process (min of 3; not at 10 MiB); m3/d3 = merge3 time / diff3 time;
peak/in = peak Python memory of one diff3 call / bytes of its three inputs;
conflicts, git = conflict blocks / lines inside them in diff3's and git's result
  (adjacent edits, and a section in while another goes out, are clean by design);
docs: real prose, this Python's standard library docstrings, a paragraph rewritten on each side
  about once per 8 KiB; ours == base, theirs == base: one side alone;
few distinct lines, random ticks, a line added everywhere: the adversarial rows, at 1 and 10 MiB
  (x1M against git x1M); random ticks: ours re-ticks a checklist at random: no line is unique,
  so diff3 makes the change it meets one conflict; both re-tick: theirs re-ticks it too.""")


def growth(best: dict, label: str, width: int) -> str:
    """A 10 MiB row's best time over its class's at 1 MiB (the x1M cells), else "-"."""
    smaller = best.get(label.replace("10 MiB", "1 MiB"))
    return f"{best[label] / smaller:{width}.1f}" if smaller and label.endswith("10 MiB") else "-"


def two_way(base: str, ours: str, theirs: str) -> None:
    """diff3's first step alone: the texts split into lines, base diffed against each side."""
    base_lines, ours_lines, theirs_lines = map(split_lines, (base, ours, theirs))
    get_hunks(base_lines, ours_lines)
    get_hunks(base_lines, theirs_lines)


def bench_shapes(args) -> None:
    """diff3 and git on the generated cases whose intended merge is known."""
    git = shutil.which("git")
    header = (f"{'shape':12} {'cases':>6} | {'diff3 right':>11} {'wrong':>6} {'conflict':>8} {'lines':>6} | "
              f"{'git right':>9} {'wrong':>6} {'conflict':>8} {'lines':>6}")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SHAPES:
            tally = {"diff3": [0, 0, 0, 0], "git": [0, 0, 0, 0]}
            for seed in range(args.cases):
                case = generate(shape, seed)
                results = {"diff3": diff3(case.base, case.ours, case.theirs)}
                if git:
                    paths = []
                    for name, text in (("ours", case.ours), ("base", case.base), ("theirs", case.theirs)):
                        Path(tmp, name).write_text(text, encoding="utf-8")
                        paths.append(str(Path(tmp, name)))
                    run = subprocess.run([git, "merge-file", "-p", *paths], capture_output=True)
                    results["git"] = (run.stdout.decode(), run.returncode != 0)
                for tool, (merged, conflict) in results.items():
                    counts = tally[tool]
                    counts[2 if conflict else 0 if merged == case.intended else 1] += 1
                    counts[3] += int(conflicts(merged).split("/")[1])
            cells = [" ".join(f"{n:>{w}}" for n, w in zip(tally[tool], widths))
                     for tool, widths in (("diff3", (11, 6, 8, 6)), ("git", (9, 6, 8, 6)))]
            print(f"{shape:12} {args.cases:6} | {cells[0]} | {cells[1]}")
    print("""
right / wrong: clean merges equal to the intended result, or not; conflict: merges with markers;
lines: lines inside conflict blocks, all cases together.  Cases come from testkit.generate
(seeds 0 to cases-1); where the edits meet, only a conflict is right.""")


# ----------------------------------------------------------------- crash

def bench_crash(args) -> None:
    """kill -9 the reference server while two writers publish, again and again.

    Counts acknowledged versions that a restart no longer holds byte for
    byte, and documents that no longer take a write (wedged).
    """
    rng = random.Random(9)
    token = "crash-token"
    acknowledged = {}  # (path, version) -> sha256 of the body the server said it stored
    refused = []  # a writer's write the server refused other than by conflict: a wedged document
    lost = wedged = 0
    with tempfile.TemporaryDirectory() as root:
        for _ in range(args.kills):
            process, url = start_server(root, token)
            writers = [threading.Thread(target=crash_writer, args=(url, token, path, size, acknowledged, refused))
                       for path, size in (("/small.md", 200), ("/large.md", 2 << 20))]
            for writer in writers:
                writer.start()
            time.sleep(rng.uniform(0.02, 0.4))
            process.kill()  # SIGKILL: no cleanup of any kind
            process.wait()
            for writer in writers:
                writer.join()
        process, url = start_server(root, token)
        try:
            client = MarkClient(url, token=token, timeout=30)
            for (path, version), digest in sorted(acknowledged.items()):
                stored = client.fetch(path, version=version)
                lost += stored.status != "ok" or hashlib.sha256(stored.body.encode()).hexdigest() != digest
            for path in ("/small.md", "/large.md"):
                current = client.fetch(path)
                version = int(current.metadata["version"]) if current.status == "ok" else 0
                wedged += client.publish(path, f"after the kills {rng.random()}\n", version).status != "created"
        finally:
            process.kill()
            process.wait()
    print(f"kills: {args.kills}   acknowledged versions: {len(acknowledged)}   lost: {lost}   "
          f"writes refused as if wedged: {len(refused)}   documents wedged at the end: {wedged}")


def start_server(root: str, token: str, *options: str):
    """mark_server.py as its own process on a free port; (process, url, and the mark:// URL with --quic)."""
    process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("mark_server.py")),
                                "--root", root, "--port", "0", *options],
                               env={**os.environ, "MARK_TOKEN": token}, stderr=subprocess.PIPE, text=True)
    line = ""
    while not line.startswith("mark-server: serving"):  # after what its start-up sweep says
        line = process.stderr.readline()
        if not line:
            raise RuntimeError(f"mark_server.py did not start (exit {process.wait()})")
    url = line.rsplit(" at ", 1)[1].strip()
    mark_url = process.stderr.readline().split(" at ", 1)[1].split(",")[0] if "--quic" in options else None
    # Its log goes on: read it, or the server stops when the pipe is full.
    threading.Thread(target=process.stderr.read, daemon=True).start()
    return (process, url) if mark_url is None else (process, url, mark_url)


def crash_writer(url: str, token: str, path: str, size: int, acknowledged: dict, refused: list) -> None:
    """Publish new versions of `path` until the server dies; record what it acknowledged,
    and any write it refused for a reason but a conflict."""
    client = MarkClient(url, token=token, timeout=5)
    try:
        latest = client.fetch(path)
        version = int(latest.metadata["version"]) if latest.status == "ok" else 0
        while True:
            body = f"{path} v{version + 1} {time.time()}\n" + "x" * size
            response = client.publish(path, body, version)
            if response.status != "created":
                if response.status != "conflict":
                    refused.append((path, response.status))
                return
            version = int(response.metadata["version"])
            acknowledged[(path, version)] = hashlib.sha256(body.encode()).hexdigest()
    except MarkError:
        return  # the server is gone


# --------------------------------------------------------------- publish

PUBLISH_HEADER = (f"{'server':>14} {'writers':>7} {'mode':>7} {'edits':>5} {'landed':>6} {'escalated':>9} "
                  f"{'raised':>6} {'told':>4} "
                  f"{'lost':>4} {'repairs':>7} {'refused':>7} {'req/edit':>8} {'median ms':>9} {'p95 ms':>7}")


def publish_round(url: str, token: str, verify, writer: str, edits: int, mode: str, path: str) -> dict:
    """One writer's edits to its own section; what happened to each, and what it sent."""
    client = MarkClient(url, token=token, verify=verify)
    counts = {"requests": 0, "refused": 0}
    exchange = client._exchange  # a dev script, it may reach in: every send, over either transport, is one

    def counted(*args, **kwargs):
        counts["requests"] += 1
        got = exchange(*args, **kwargs)
        counts["refused"] += got.kind == "refused"
        return got

    client._exchange = counted
    with client:
        publish = {"merge": merge_publish, "naive": naive_publish, "section": section_publish(writer)}[mode]
        named: list = []
        outcomes = write_rounds(client, path, writer, edits, reported(publish, named))
    return {"landed": [line for line, result, _ in outcomes if result.status == "ok"], "named": named,
            "escalated": sum(result.status == "conflict" for _, result, _ in outcomes),
            "raised": sum(result.status == "raised" for _, result, _ in outcomes),
            "repairs": sum(result.repaired is not None for _, result, _ in outcomes),
            "latencies": [seconds for _, _, seconds in outcomes], **counts}


def reported(publish, named: list):
    """`publish`, with a MarkError it raises counted as a result: status "raised"; the
    version an "overwritten" error names goes into `named`."""
    def call(client: MarkClient, path: str, body: str, version: int):
        try:
            return publish(client, path, body, version)
        except MarkError as error:
            if "lost-version" in error.metadata:
                named.append(int(error.metadata["lost-version"]))
            return PublishResult("raised", reason=error.status)

    return call


def merge_publish(client: MarkClient, path: str, body: str, version: int):
    return mark_publish(client, path, body, version, on_conflict="merge")


def naive_publish(client: MarkClient, path: str, body: str, version: int):
    """The naive caller: on conflict, re-read the version number and re-publish its stale body."""
    result = mark_publish(client, path, body, version)
    while result.status == "conflict":
        result = mark_publish(client, path, body, int(client.request("FETCH", path).metadata["version"]))
    return result


def publish_row(label: str, url: str, token: str, verify, writers: int, mode: str, edits: int) -> str:
    """`writers` writers doing `edits` edits each on one document at `url`: one table row."""
    names = [f"W{n}" for n in range(writers)]
    with MarkClient(url, token=token, verify=verify) as seed:
        seed.publish("/bench.md", sectioned_document(names), 0)
    results = together(*[lambda w=w: publish_round(url, token, verify, w, edits, mode, "/bench.md")
                         for w in names])
    with MarkClient(url, token=token, verify=verify) as reader:
        final = reader.fetch("/bench.md").body
        named_bodies = [reader.fetch("/bench.md", version=v).body for r in results for v in r["named"]]
    landed = [line for r in results for line in r["landed"]]
    missing = [line for line in landed if f"\n{line}\n" not in final]
    told = sum(any(f"\n{line}\n" in body for body in named_bodies) for line in missing)
    lost = len(missing) - told
    latencies = sorted(t for r in results for t in r["latencies"])
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    total = {key: sum(r[key] for r in results) for key in ("escalated", "raised", "repairs", "refused", "requests")}
    return (f"{label:>14} {writers:7} {mode:>7} {len(latencies):5} {len(landed):6} {total['escalated']:9} "
            f"{total['raised']:6} {told:4} "
            f"{lost:4} {total['repairs']:7} {total['refused']:7} {total['requests'] / max(1, len(landed)):8.2f} "
            f"{1000 * statistics.median(latencies):9.1f} {1000 * p95:7.1f}")


PUBLISH_NOTES = """
landed: calls that returned status ok; escalated: returned status conflict to the caller;
raised: calls that raised MarkError (for the naive caller, a repair that others' clobbering outran);
told: landed edits missing from the final document but held by a version a raised
  MarkError("overwritten") names: lost loudly, the raising writer told to publish it again;
lost: landed edits missing from the final document, and named by no error: lost silently
  (the naive caller clobbers them);
repairs: answers that restored a version the server had overwritten (repaired: N);
refused: requests the server refused unhandled (rate limit), each sent again;
req/edit: Mark requests sent, resends included (and the initial FETCH), per landed edit;
modes: merge = mark_publish(on_conflict="merge") of the whole document; section = update_section
  of the writer's own section only; naive = re-publish the stale body at the newest version."""


def bench_publish(args) -> None:
    """The reference server, rate limit off (it measures the merge loop, not the limit)."""
    print(PUBLISH_HEADER)
    print("-" * len(PUBLISH_HEADER))
    token = "bench-token"
    for transport in ("http", "quic"):
        for writers in (1, 2, 4, 8, 16):
            for mode in ("merge", "section", "naive"):
                with tempfile.TemporaryDirectory() as store, \
                        serve(store, token=token, log=None, quic=transport == "quic", rate_limit=0) as server:
                    url, verify = server.url, True
                    if transport == "quic":
                        url, verify = server.mark_url, os.path.join(store, ".ca.pem")
                        Path(verify).write_bytes(server.certificate_pem)
                    print(publish_row(f"ours {transport}", url, token, verify, writers, mode, args.edits))
    print(PUBLISH_NOTES)
    print("ours http: Mark over HTTP/1.1 keep-alive; ours quic: Mark over QUIC, one connection per writer.")


def bench_real(args) -> None:
    """The real demarkus-server, rate limit on (its default, 50/s, bursts of 100) and off;
    `--writers`, `--mode` and `--runs` pick rows and repeat them (a fresh server each)."""
    if not inside_loopback():  # it listens on every interface: run it, and us, in the loopback namespace
        os.execv(str(REAL_DEMARKUS / "loopback"), [str(REAL_DEMARKUS / "loopback"), sys.executable] + sys.argv)
    print(PUBLISH_HEADER)
    print("-" * len(PUBLISH_HEADER))
    token = "bench-token"
    for rate_limit, label in ((None, "real limited"), (0, "real unlimited")):
        for writers in args.writers or (1, 2, 4, 8, 16):
            for mode in args.mode or ("merge", "section", "naive"):
                for _ in range(args.runs):
                    with tempfile.TemporaryDirectory() as folder, \
                            real_demarkus(Path(folder), token, rate_limit) as url:
                        print(publish_row(label, url, token, False, writers, mode, args.edits), flush=True)
    print(PUBLISH_NOTES)
    print("real limited: the real server's default rate limit; real unlimited: DEMARKUS_RATE_LIMIT=0.")


# ---------------------------------------------------------------- limits

def bench_limits(args) -> None:
    """What one client, from 127.0.0.2, can take from the others (from 127.0.0.1), against
    mark_server.py in a process of its own, its rate limit off."""
    token = "bench-token"
    with tempfile.TemporaryDirectory() as root:
        process, url, mark_url = start_server(root, token, "--quic", "--rate-limit", "0")
        try:
            print(f"{'what':58} {'answered':>9} {'median ms':>9}")
            print("-" * 78)
            print(limits_row("QUIC FETCH, nobody else", mark_url, args.requests))
            attacker = Attacker(int(mark_url.rsplit(":", 1)[1]))
            for _ in range(7):  # 70 requests that never end: as many as it may open
                connection = attacker.connect()
                for _ in range(10):
                    attacker.open(connection, b"PUBLISH /x.md\n---\n")
            print(limits_row("QUIC FETCH, one client holding 64+ streams open", mark_url, args.requests))
            attacker.close()
            idle = [http_from(url, ELSEWHERE) for _ in range(64)]
            print(limits_row("HTTP FETCH, one client holding 64 idle sockets", url, args.requests))
            for conn in idle:
                conn.close()
            before = memory(process.pid)["VmRSS"]

            def upload(n: int) -> str:
                with MarkClient(mark_url, token=token, verify=False, timeout=120) as client:
                    try:
                        return client.publish(f"/big{n}.md", "x" * (8 << 20)).status
                    except MarkError as error:
                        return error.status

            statuses = together(*[lambda n=n: upload(n) for n in range(args.uploads)])
            peak = memory(process.pid)["VmHWM"]
            print(f"\nserver RSS {before / 1024:.0f} MiB before {args.uploads} concurrent 8 MiB QUIC uploads, "
                  f"{peak / 1024:.0f} MiB at the peak; uploads: {dict(collections.Counter(statuses))}")
        finally:
            process.kill()
            process.wait()


def limits_row(what: str, url: str, requests: int) -> str:
    answered, times = 0, []
    with MarkClient(url, verify=False, timeout=5) as client:
        for _ in range(requests):
            start = time.perf_counter()
            try:
                answered += client.fetch("/health").status == "ok"
            except MarkError:
                pass
            times.append(time.perf_counter() - start)
    return f"{what:58} {answered:>4}/{requests:<4} {1000 * statistics.median(times):9.1f}"


def memory(pid: int) -> dict:
    """The kB figures of /proc/PID/status (VmRSS, VmHWM: the peak)."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: int(value.split()[0]) for key, value in (line.split(":", 1) for line in lines)
            if value.strip().endswith("kB")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("diff3", help="diff3() against git merge-file")
    d.add_argument("--rounds", type=int, default=5, help="rounds of 3 timed runs of each")
    d.add_argument("--only", action="append", default=[], metavar="TEXT",
                   help="only the scenarios whose name contains TEXT (repeatable)")
    d.set_defaults(run=bench_diff3)
    s = sub.add_parser("shapes", help="diff3 and git on generated cases with a known intended merge")
    s.add_argument("--cases", type=int, default=1000, help="cases per shape")
    s.set_defaults(run=bench_shapes)
    c = sub.add_parser("crash", help="kill -9 the server mid-write; count lost and wedged")
    c.add_argument("--kills", type=int, default=100)
    c.set_defaults(run=bench_crash)
    p = sub.add_parser("publish", help="the merge loop against the reference server, and a naive caller")
    p.add_argument("--edits", type=int, default=20, help="edits per writer")
    p.set_defaults(run=bench_publish)
    r = sub.add_parser("real", help="the merge loop and a naive caller against the real demarkus-server")
    r.add_argument("--edits", type=int, default=10, help="edits per writer")
    r.add_argument("--writers", type=int, action="append", help="only this many writers (repeatable)")
    r.add_argument("--mode", action="append", choices=("merge", "section", "naive"), help="only this mode")
    r.add_argument("--runs", type=int, default=1, help="runs of each row, each on a fresh server")
    r.set_defaults(run=bench_real)
    m = sub.add_parser("limits", help="what one client can take of the reference server from the others")
    m.add_argument("--requests", type=int, default=50, help="FETCHes of the other client, per row")
    m.add_argument("--uploads", type=int, default=40, help="concurrent 8 MiB QUIC uploads")
    m.set_defaults(run=bench_limits)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    sys.exit(main())
