"""Section writes (update_section, mark-publish --section, mark_update_section) and
section reads (fetch of path#anchor), against the reference server over real sockets."""

import anyio
import pytest
from mcp import Client

import mark_publish as mp
from mark_mcp import create_server
from mark_publish import MarkClient
from mark_sections import fetch_section, update_section
from testkit import add_line, replace_line, section_of, sectioned_document, together

TOKEN = "section-test-token"
PATH = "/notes.md"
WRITERS = ["A", "B", "C", "D"]
BASE = sectioned_document(WRITERS)


@pytest.fixture
def client(server):
    with MarkClient(server.url, token=TOKEN) as c:
        assert c.publish(PATH, BASE, expected_version=0).status == "created"
        yield c


def current(client):
    page = client.fetch(PATH)
    return int(page.metadata["version"]), page.body


@pytest.mark.parametrize("section", ["## B", "B", "#b", "#B", " ## B "])
def test_a_section_write_replaces_that_section_only(client, section):
    res = update_section(client, PATH, section, "## B\n\nB, rewritten.\n\n")
    assert res.to_text() == "status: ok\nversion: 2\nsection: #b\nmerged: false\n"
    assert current(client) == (2, BASE.replace("B's intro.", "B, rewritten."))


def test_anchors_are_demarkus_anchors(client):
    doc = ("# Notes\n\n## Results\n\nfirst\n\n### Detail\n\nd\n\n## Results\n\nsecond\n\n"
           "```\n## Not a heading: code\n```\n\n## Results-1\n\nthird\n\n"
           "## Café *bold* `code` [link](http://x) & more! ##\n\ncafé\n\n"
           "Underlined\n==========\n\nu\n\n#\n\nafter an empty heading\n")
    client.publish(PATH, doc, 1)
    sections = {
        "#notes": doc[:doc.index("Underlined")],  # a setext heading of level 1 ends it
        "#results": "## Results\n\nfirst\n\n### Detail\n\nd\n\n",  # runs over its subsection
        "#detail": "### Detail\n\nd\n\n",
        "#results-1": "## Results\n\nsecond\n\n```\n## Not a heading: code\n```\n\n",
        "#results-1-1": "## Results-1\n\nthird\n\n",  # as GitHub's slugger numbers it
        "#café-bold-code-link--more": "## Café *bold* `code` [link](http://x) & more! ##\n\ncafé\n\n",
        "#underlined": "Underlined\n==========\n\nu\n\n#\n\nafter an empty heading\n",
    }
    for anchor, text in sections.items():
        page = fetch_section(client, PATH, anchor)
        assert page.body == text, anchor
        assert (page.metadata["version"], page.metadata["section"]) == ("2", anchor)
    assert fetch_section(client, PATH + "/v2", "#RESULTS-1").body == sections["#results-1"]
    with pytest.raises(ValueError, match="section #not-a-heading-code not found in /notes.md; available anchors: "
                                         "notes, results, detail, results-1, results-1-1, café-bold-code-link--more, "
                                         "underlined$"):  # demarkus's words
        fetch_section(client, PATH, "#not-a-heading-code")
    # As demarkus does, an anchor that is no heading's is tried as a heading's text.
    assert fetch_section(client, PATH, "#Café *bold* `code` [link](http://x) & more!").body == \
        sections["#café-bold-code-link--more"]
    with pytest.raises(ValueError, match="section ### Results not found"):  # the level must match
        update_section(client, PATH, "### Results", "### Results\n")
    assert update_section(client, PATH, "## Results-1", "## Results-1\n\nthird, edited\n\n").section == \
        "#results-1-1"


def test_headings_in_quotes_and_lists_count_and_in_comments_do_not(client):
    doc = ("# T\n\n> ## Quoted\n> text\n\n- ## Listed\n- item\n\n<!--\n## commented out\n-->\n\n"
           "> ```\n> ## quoted code\n> ```\n\n## Last\n")
    client.publish(PATH, doc, 1)
    assert fetch_section(client, PATH, "#quoted").body == "> ## Quoted\n> text\n\n"
    assert fetch_section(client, PATH, "#listed").body == "- ## Listed\n- item\n\n<!--\n## commented out\n-->\n\n" \
                                                  "> ```\n> ## quoted code\n> ```\n\n"
    with pytest.raises(ValueError, match="available anchors: t, quoted, listed, last$"):
        fetch_section(client, PATH, "#commented-out")
    client.publish(PATH, "# T\n\n## ???\n\nq\n", 2)
    assert fetch_section(client, PATH, "#").body == "## ???\n\nq\n"  # no letters: the empty anchor, as in demarkus


def test_a_missing_or_twice_named_section_is_an_error_and_nothing_is_written(client):
    client.publish(PATH, BASE + "## B\n\nanother B\n", 1)
    with pytest.raises(ValueError, match="section ## E not found in /notes.md; available anchors: shared-notes, "
                                         "a, b, c, d, b-1"):
        update_section(client, PATH, "## E", "## E\n\ne\n")
    with pytest.raises(ValueError, match="section 'B' names 2 headings of /notes.md; name one by its anchor: #b, #b-1"):
        update_section(client, PATH, "B", "## B\n\nnew\n")
    assert update_section(client, PATH, "#b-1", "## B\n\nthe second B\n").status == "ok"
    assert current(client) == (3, BASE + "## B\n\nthe second B\n")


@pytest.mark.parametrize("arguments, error", [
    (dict(section="", body="## B\n"), "section must be a heading's text or anchor"),
    (dict(section=None, body="## B\n"), "section must be str, not NoneType"),
    (dict(section="B", body="B, no heading\n"), "body must start with the section's heading line"),
    (dict(section="B", body="\n## B\n"), "body must start with the section's heading line"),
    (dict(section="B", body=b"## B\n"), "body must be str"),
    (dict(section="B", body="## B\n", expected_version=0), "expected_version must be >= 1"),
    (dict(section="B", body="## B\n", max_retries=0), "max_retries must be >= 1"),
])
def test_bad_arguments_are_named_before_anything_is_sent(arguments, error):
    with MarkClient("http://127.0.0.1:9", token=TOKEN) as nowhere:  # nothing listens: any request would fail
        with pytest.raises((TypeError, ValueError), match=error):
            update_section(nowhere, PATH, **arguments)


def test_four_writers_on_four_sections_all_land_with_no_merge(server, client):
    def write(writer):
        with MarkClient(server.url, token=TOKEN) as own:
            body = section_of(add_line(BASE, writer, f"{writer} was here"), writer)
            return update_section(own, PATH, f"## {writer}", body, expected_version=1)

    results = together(*[lambda w=w: write(w) for w in WRITERS])
    assert [(r.status, r.merged, r.section) for r in results] == [("ok", False, f"#{w.lower()}") for w in WRITERS]
    assert sorted(r.version for r in results) == [2, 3, 4, 5]
    final = BASE
    for writer in WRITERS:
        final = add_line(final, writer, f"{writer} was here")
    assert current(client) == (5, final)


def test_a_section_changed_since_expected_version_is_merged_on_its_own(client):
    base = add_line(BASE, "B", "\nB's second paragraph.")
    client.publish(PATH, base, 1)
    theirs = add_line(replace_line(base, "B's intro.", "B's intro, theirs."), "C", "C's line")
    client.publish(PATH, theirs, 2)
    ours = section_of(replace_line(base, "B's second paragraph.", "B's second paragraph, ours."), "B")
    res = update_section(client, PATH, "## B", ours, expected_version=2)
    both = replace_line(theirs, "B's second paragraph.", "B's second paragraph, ours.")
    assert (res.status, res.version, res.merged, res.base_version, res.their_version, res.body) == \
        ("ok", 4, True, 2, 3, both)
    assert current(client) == (4, both)


def test_overlap_answers_a_conflict_with_markers_in_that_section_only(client):
    theirs = add_line(replace_line(BASE, "B's intro.", "B's intro, theirs."), "A", "A's line")
    client.publish(PATH, theirs, 1)
    res = update_section(client, PATH, "#b", "## B\n\nB's intro, ours.\n\n", expected_version=1)
    assert (res.status, res.mergeable, res.your_version, res.current_version, res.section) == \
        ("conflict", False, 1, 2, "#b")
    marked = "## B\n\n<<<<<<< ours\nB's intro, ours.\n=======\nB's intro, theirs.\n>>>>>>> theirs\n\n"
    assert res.body == theirs.replace(section_of(theirs, "B"), marked)
    assert res.body.count("<<<<<<<") == 1
    assert current(client) == (2, theirs)  # nothing published


def test_a_section_can_be_renamed_and_sent_without_its_last_newline(client):
    res = update_section(client, PATH, "## B", "## Bee\n\nrenamed")
    assert (res.status, res.section) == ("ok", "#bee")
    assert current(client)[1] == BASE.replace("## B\n\nB's intro.\n\n", "## Bee\n\nrenamed\n")
    assert fetch_section(client, PATH, "#bee").body == "## Bee\n\nrenamed\n"
    last = update_section(client, PATH, "D", "## D\n\nthe end")
    assert current(client)[1].endswith("## D\n\nthe end")
    assert last.version == 3


def test_a_crlf_document_keeps_its_line_endings(client):
    crlf = BASE.replace("\n", "\r\n")
    client.publish(PATH, crlf, 1)
    assert fetch_section(client, PATH, "#c").body == "## C\r\n\r\nC's intro.\r\n\r\n"
    assert update_section(client, PATH, "## C", "## C\r\n\r\nC, CRLF.").status == "ok"
    assert current(client)[1] == crlf.replace("C's intro.\r\n\r\n", "C, CRLF.\r\n")


def test_the_cli_writes_a_section(server, client, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MARK_TOKEN", TOKEN)
    body = tmp_path / "section.md"
    body.write_text("## C\n\nC, from the command line.\n\n")
    assert mp.main(["--server", server.url, PATH, "--section", "#c", "--file", str(body)]) == 0
    assert capsys.readouterr().out == "status: ok\nversion: 2\nsection: #c\nmerged: false\n"
    assert current(client)[1] == BASE.replace("C's intro.", "C, from the command line.")
    assert mp.main(["--server", server.url, PATH, "--section", "#zz", "--file", str(body)]) == 2
    assert "section #zz not found in /notes.md" in capsys.readouterr().err
    for wrong in (["--section", "C", "--on-conflict", "merge"], []):  # --on-conflict is for whole documents
        with pytest.raises(SystemExit) as stopped:
            mp.main(["--server", server.url, PATH, "--file", str(body), *wrong])
        assert stopped.value.code == 2
    assert "--expected-version is required (but for --section)" in capsys.readouterr().err


def test_the_mcp_tools_read_and_write_one_section(server, client):
    async def run():
        async with Client(create_server(server.url, TOKEN)) as agent:
            read = await agent.call_tool("mark_fetch", {"url": PATH + "#c"})
            absent = await agent.call_tool("mark_fetch", {"url": PATH + "#zz"})
            wrote = await agent.call_tool("mark_update_section", {
                "url": PATH, "section": "## C", "body": "## C\n\nC, by an agent.\n\n", "expected_version": 1})
            missing = await agent.call_tool("mark_update_section", {"url": PATH, "section": "Z", "body": "## Z\n"})
            listed = await agent.call_tool("mark_list", {"url": "/#c"})
            return read, absent, wrote, missing, listed

    read, absent, wrote, missing, listed = anyio.run(run)
    # As demarkus-mcp answers url#anchor: the document's answer, `section` added, that section for body.
    assert read.content[0].text.startswith("status: ok\nversion: 1\nmodified: ")
    assert read.content[0].text.endswith("\nsection: #c\n\n## C\n\nC's intro.\n\n")
    assert absent.is_error and "section #zz not found in /notes.md; available anchors: shared-notes, a, b, c, d" \
        in absent.content[0].text
    assert wrote.content[0].text == "status: ok\nversion: 2\nsection: #c\nmerged: false\n"
    assert wrote.structured_content == {"status": "ok", "version": 2, "section": "#c", "merged": False}
    assert missing.is_error and "section Z not found in /notes.md" in missing.content[0].text
    assert listed.is_error and "without #c" in listed.content[0].text
    page = client.fetch(PATH)
    assert page.body == BASE.replace("C's intro.", "C, by an agent.") and page.metadata["agent"] == "mcp"
