"""The frontmatter codec: one block, byte-identical in the client and the server."""

import subprocess
import sys
from pathlib import Path

import pytest

import mark_client
import mark_server
from mark_server import MarkFailure, read_request

HERE = Path(__file__).parent
START, END = "# ---- frontmatter codec:", "# ---- end of frontmatter codec\n"


def codec_block(file: str) -> str:
    text = (HERE / file).read_text(encoding="utf-8")
    assert text.count(START) == 1 and text.count(END) == 1, file
    return text[text.index(START):text.index(END) + len(END)]


def test_client_and_server_hold_the_same_codec():
    assert codec_block("mark_client.py") == codec_block("mark_server.py")


# value, as written: plain where yaml.v3 writes it so, else a double-quoted scalar
WRITTEN = [
    ("plain", "plain"),
    ("s3cret-write-token", "s3cret-write-token"),
    ("919bcc4352da611ee9477f60140499753b3a6b6b6e6b1cdb21c681f8b9bdbea4",
     "919bcc4352da611ee9477f60140499753b3a6b6b6e6b1cdb21c681f8b9bdbea4"),
    ("3", '"3"'),
    ("2026-12-03T10:41:15Z", '"2026-12-03T10:41:15Z"'),
    ("1e5", '"1e5"'),
    ("0x1F", '"0x1F"'),
    ("yes", '"yes"'),
    ("Null", '"Null"'),
    ("-dash", '"-dash"'),
    ("", '""'),
    ('say "hi"', '"say \\"hi\\""'),
    ("back\\slash", '"back\\\\slash"'),
    ("line\nbreak\ttab\rcr", '"line\\nbreak\\ttab\\rcr"'),
    ("\x00\x1b\x7f\x85\x9f", '"\\x00\\x1b\\x7f\\x85\\x9f"'),
    ("\ufeff", '"\\ufeff"'),
    ("🚀 rocket", '"\\U0001f680 rocket"'),
    ("a#b: c", '"a#b: c"'),
    ("true", '"true"'),
    ("  7", '"  7"'),
    ("é ü 中", '"é ü 中"'),
]


@pytest.mark.parametrize("module", [mark_client, mark_server], ids=["client", "server"])
@pytest.mark.parametrize("value,written", WRITTEN, ids=[w[1] for w in WRITTEN])
def test_values_are_written_as_yaml_and_read_back(module, value, written):
    text = module.write_frontmatter({"key": value})
    assert text == f"---\nkey: {written}\n---\n"
    assert module.read_frontmatter(text + "body") == ({"key": value}, "body")


# a metadata line as another writer may send it, and what it means
READ = [
    ("k: v", {"k": "v"}),
    ("k: a#b", {"k": "a#b"}),  # '#' starts a comment only after a space
    ("k: a #note", {"k": "a"}),
    ('k: "a\\\tb"', {"k": "a\tb"}),  # an escaped tab
    ("k: 'it''s'", {"k": "it's"}),
    ('"1": "x"', {"1": "x"}),
    ('k: "\\x41\\u00e9\\U0001F680\\N\\_\\L\\P\\/"', {"k": "Aé🚀\x85\xa0\u2028\u2029/"}),
    ("k:", {"k": ""}),
]


@pytest.mark.parametrize("line,meaning", READ, ids=[r[0] for r in READ])
def test_lines_read_alike_by_client_and_server(line, meaning):
    text = f"---\n{line}\n---\nbody"
    assert mark_client.read_frontmatter(text) == (meaning, "body")
    assert read_request(text) == (meaning, "body")


MALFORMED = ["k:v", "k: |", "k: [1]", "  k: v", 'k: "open', 'k: "\\q"', 'k: "\\ud800"', 'k: "a" b']


@pytest.mark.parametrize("line", MALFORMED)
def test_malformed_lines_are_refused_by_both(line):
    text = f"---\n{line}\n---\n"
    with pytest.raises(ValueError):
        mark_client.read_frontmatter(text)
    with pytest.raises(MarkFailure) as failure:
        read_request(text)
    assert failure.value.status == "bad-request"


def test_oversized_metadata_is_refused_before_it_is_parsed():
    with pytest.raises(MarkFailure) as failure:
        read_request("---\nk: " + "v" * (70 * 1024) + "\n---\n")
    assert failure.value.status == "too-large"


def test_parsing_is_linear():
    # This line froze the old server's regex for minutes; a bound, not a benchmark.
    line = "k: v" + " " * 65_000 + "y"
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from mark_server import read_request, MarkFailure\n"
              "try:\n    read_request(sys.argv[2])\nexcept MarkFailure:\n    pass\n")
    subprocess.run([sys.executable, "-c", script, str(HERE), f"---\n{line}\n---\n"], timeout=30, check=True)
