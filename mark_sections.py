"""Section writes and reads: one writer per section of a markdown document, no conflicts between them.

    >>> import tempfile
    >>> from mark_server import serve                     # a reference server to try it on
    >>> server = serve(tempfile.mkdtemp(), token="dev-secret", log=None)
    >>> from mark_publish import MarkClient
    >>> from mark_sections import fetch_section, update_section
    >>> client = MarkClient(server.url, token="dev-secret")
    >>> client.publish("/notes.md", "# Notes\\n\\n## A\\n\\nA.\\n\\n## B\\n\\nB.\\n", expected_version=0).status
    'created'
    >>> update_section(client, "/notes.md", "## B", "## B\\n\\nB, rewritten.\\n").to_text()
    'status: ok\\nversion: 2\\nsection: #b\\nmerged: false\\n'
    >>> fetch_section(client, "/notes.md", "#b").body
    '## B\\n\\nB, rewritten.\\n'
    >>> client.close(); server.close()

A section is a heading and what follows it up to the next heading of its
level or higher, as demarkus's outline (CommonMark) finds headings: ATX
("## Results") and setext headings, never a line in code or an HTML comment.
`update_section` puts a new section into whatever version is latest, through
`mark_publish.publish_edit` (the merge loop); where the section itself
changed since the version the caller edited, that section alone is merged
three-way (diff3).  So writers of other sections never conflict.  Needs
`mark_publish.py` (and what it needs) beside it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Dict, List, NamedTuple, Optional, Tuple

from diff3 import diff3
from mark_client import MarkClient, MarkError, MarkResponse, check_int, check_path, check_str
from mark_publish import PublishResult, publish_edit

__version__ = "0.3.0"  # the release this file is from; vendored copies keep saying it
__all__ = ["update_section", "fetch_section"]


def update_section(
    client: MarkClient,
    path: str,
    section: str,
    body: str,
    expected_version: Optional[int] = None,
    max_retries: int = 3,
    metadata: Optional[Dict[str, str]] = None,
) -> PublishResult:
    """Replace one section of the document with `body`, on whatever version is latest.

    `section` names a heading by its text ("## Results" or "Results") or by
    its anchor as demarkus renders it ("#results"; "#results-1" is the
    second "Results").  A section runs from its heading line to the next
    heading of its level or higher; headings in code and comments do not count.
    `body` is the new section, its heading line included.  Every attempt
    puts it into the latest version, so edits to other sections never
    conflict.  With `expected_version` (the version `body` was edited
    from), a section changed since then is merged three-way on its own:
    clean publishes (`merged: true`, `body`: the document published);
    overlap publishes nothing and returns `status: conflict` with the
    document, markers in that section only.  Without it the section
    becomes `body` whatever it holds when the call starts (a writer who
    changes it during the call is merged with): pass the version you
    read, so that an edit made since is merged too, not replaced.
    At most 1 + `max_retries` PUBLISHes.  Answers as `mark_publish`'s, with
    `section` (the anchor) and `your-version` the version the first attempt
    went out against.  Raises ValueError for a section that is missing or
    named twice, MarkError as `mark_publish` does.
    """
    check_path(path)
    check_str("body", body)
    check_str("section", section)
    if not section.strip():
        raise ValueError("section must be a heading's text or anchor, such as '## Results' or '#results'")
    if expected_version is not None:
        check_int("expected_version", expected_version, minimum=1)
    check_int("max_retries", max_retries, minimum=1)
    if [h.start for h in _headings(body)[:1]] != [0]:
        raise ValueError(f"body must start with the section's heading line, such as '## Results', not {body[:40]!r}")
    # The section is replaced as it was in the version the caller edited, else in the newest one
    # now; the first attempt goes out against that version, as mark_publish's does.  Whoever
    # changes the section after it is merged with, never overwritten.
    edited = client.fetch(path) if expected_version is None else client.fetch(path, version=expected_version)
    if edited.status == "not-found" and expected_version is not None:  # never was, or the server let it go
        latest = client.fetch(path)
        return PublishResult("conflict", your_version=expected_version, mergeable=False, reason="base-unavailable",
                             current_version=latest.number("version") if latest.status == "ok" else None)
    if edited.status != "ok":
        raise MarkError.from_response(edited, f"FETCH {path}")
    since = edited.number("version")
    found = _find_section(edited.body, section, path if expected_version is None else f"{path}/v{since}")
    then = edited.body[found.start:found.end]
    last: Dict[str, object] = {}  # what the latest attempt did: the section's anchor, and whether it merged

    def put(latest: str) -> Tuple[str, bool]:
        """`latest` with `body` as the section, merged with the section there where it changed since `then`."""
        found = _find_section(latest, section, path)
        now = latest[found.start:found.end]
        merging = now != then
        new, overlap = diff3(then, body, now) if merging else (body, False)
        if found.end < len(latest) and not new.endswith("\n"):  # end it as the document's lines end
            new += "\r\n" if latest.partition("\n")[0].endswith("\r") else "\n"
        text = latest[:found.start] + new + latest[found.end:]
        written = found if overlap else next((h for h in _headings(text) if h.start == found.start), found)
        last.update(anchor="#" + written.anchor, merged=merging)
        return text, overlap

    result = publish_edit(client, path, put, since, max_retries, metadata)
    if result.status == "ok" and not last["merged"] and result.repaired is None:
        return PublishResult("ok", version=result.version, section=last["anchor"], merged=False)
    return replace(result, section=last["anchor"])


def fetch_section(client: MarkClient, path: str, section: str) -> MarkResponse:
    """FETCH `path` and answer with one section of it, as demarkus's client answers `path#anchor`:
    the document's status and metadata, `section` added, and that section for body.

    `section` is named as `update_section` names it.  An answer other than
    `ok` comes back as it is; ValueError, naming the anchors there are, when
    the section is not there or named twice.
    """
    check_str("section", section)
    page = client.fetch(path)
    if page.status != "ok":
        return page
    found = _find_section(page.body, section, path)
    anchor = section.strip() if section.strip().startswith("#") else "#" + found.anchor
    return MarkResponse(page.status, {**page.metadata, "section": anchor}, page.body[found.start:found.end])


# ------------------------------------------------------------------ the outline

class _Heading(NamedTuple):
    """A heading and the section it opens: text[start:end], up to the next heading of its level or higher."""
    level: int
    text: str  # as written, without the #s
    anchor: str  # as demarkus renders it: "results", then "results-1", ... for repeats
    start: int
    end: int


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
_BREAK = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")  # a thematic break
_CONTAINER = re.compile(r" {0,3}(?:[-+*]|[0-9]{1,9}[.)])(?:[ \t]|$)| {0,3}>")  # a list item or a quote
_NESTING = re.compile(r"(?: {0,3}>[ \t]?| {0,3}(?:[-+*]|[0-9]{1,9}[.)])[ \t]+)*")  # the markers before a line
_MARKUP = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|<[^>]*>|(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")


def _headings(text: str) -> List[_Heading]:
    """The document's headings, as demarkus's outline (CommonMark, by goldmark) finds them:
    ATX ("## Results", in a list item or quote too) and setext (a paragraph underlined with
    = or -) headings, never a line in fenced or indented code or an HTML comment.  Inline
    markup is stripped for anchors only as far as links, code, HTML and _emphasis_ go."""
    found: List[Tuple[int, str, int]] = []  # (level, text, start)
    fence: Optional[str] = None  # the opening fence of the code block we are in
    comment = False  # in an HTML comment, until its "-->"
    paragraph: List[str] = []  # the lines of the paragraph so far; it started at `start`
    start = offset = 0
    nested = False  # in a list item or quote, whose lines may go on lazily
    for line in text.splitlines(keepends=True):
        here, offset = offset, offset + len(line)
        line = line.rstrip("\r\n")
        inner = line[_NESTING.match(line).end():]
        if fence or comment:
            closing = _FENCE.match(inner)
            if comment and "-->" in line or fence and closing and closing.group(1).startswith(fence) \
                    and not inner[closing.end():].strip():
                fence, comment = None, False
            continue
        if paragraph and not nested and _SETEXT.match(line):  # the paragraph, underlined: a heading
            found.append((1 if "=" in line else 2, "".join(paragraph), start))
            paragraph = []
            continue
        atx, opening = _ATX.match(inner), _FENCE.match(inner)
        opens_comment = inner.lstrip(" ").startswith("<!--") and "-->" not in inner.split("<!--", 1)[1]
        if not line.strip() or atx or opening or opens_comment or _BREAK.match(line):
            paragraph, nested, comment = [], False, opens_comment
            fence = opening.group(1) if opening else None
            title = re.sub(r"(?:^|[ \t]+)#+$", "", (atx.group(2) or "").strip()).strip() if atx else ""
            if title:  # an empty heading opens no section, as in demarkus
                found.append((len(atx.group(1)), title, here))
        elif nested or _CONTAINER.match(line):
            paragraph, nested = [], True
        elif paragraph or not line.startswith(("    ", "\t")):  # not indented code
            start = start if paragraph else here
            paragraph.append(line.strip())
    headings, used = [], set()
    for k, (level, title, begin) in enumerate(found):
        slug = anchor = _slug(title)
        n = 0
        while anchor in used:
            n += 1
            anchor = f"{slug}-{n}"
        used.add(anchor)
        end = next((later for deeper, _, later in found[k + 1:] if deeper <= level), len(text))
        headings.append(_Heading(level, title, anchor, begin, end))
    return headings


def _slug(title: str) -> str:
    """A heading's anchor as GitHub makes it, before numbering: the text without its
    markup, lowercase letters, digits, "_" and "-" kept, spaces made "-"."""
    text = _MARKUP.sub(lambda m: m.group(1) or "", title).lower()
    return "".join("-" if c.isspace() else c for c in text if c.isalnum() or c in "_-" or c.isspace())


def _find_section(text: str, section: str, where: str) -> _Heading:
    """The heading `section` names in `text` ("## Results", "Results" or "#results");
    ValueError, naming the section and the anchors there are, when there is none or
    more than one."""
    headings, wanted = _headings(text), section.strip()
    level = _ATX.match(wanted)
    if level and not (level.group(2) or "").strip():
        level = None  # "#" alone names the empty anchor: a heading with no letters or digits
    if wanted.startswith("#") and not level:  # an anchor, then (as demarkus does) the slug of what follows "#"
        matches = [h for h in headings if h.anchor.lower() == wanted[1:].lower()] or \
                  [h for h in headings if h.anchor == _slug(wanted[1:])]
    else:  # a heading's text, "## Results" of that level only; else its slug
        title = (level.group(2) or "").strip() if level else wanted
        named = [h for h in headings if not level or h.level == len(level.group(1))]
        matches = [h for h in named if h.text == title] or [h for h in named if _slug(h.text) == _slug(title)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join("#" + h.anchor for h in matches)
        raise ValueError(f"section {section!r} names {len(matches)} headings of {where}; "
                         f"name one by its anchor: {names}")
    names = ", ".join(h.anchor for h in headings) or "(document has no headings)"
    raise ValueError(f"section {wanted} not found in {where}; available anchors: {names}")  # demarkus's words

