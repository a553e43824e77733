"""The real Demarkus server's races, played on cue by a small fake store behind `responses`.

The real server checks `expected-version` against its newest version and
only later takes the next number, so a write can land as N+2 over another
writer's N+1 and still be answered `conflict`; it can answer `server-error`
after storing a version; its unversioned FETCH can pair the newest number
with an older body.  Each test plays one of these and checks that nothing
another writer was told was published is missing when the call returns.
"""

import hashlib
import itertools
import random
import re

import pytest
import requests
import responses

import mark_client as mc
import mark_publish as mp
from mark_publish import MarkClient, MarkError, mark_publish, merge_and_publish
from mark_sections import update_section
from testkit import add_line, section_of, sectioned_document

URL = "http://127.0.0.1:6309"
TOKEN = "repair-test-token"

BASE = "# Doc\n\nIntro.\n\nMiddle.\n\nEnd.\n"
OURS = BASE.replace("Intro.", "Intro, ours.")
THEIRS = BASE.replace("End.", "End, theirs.")  # another writer's, told it landed


class FakeMark:
    """One document's versions; `race` holds, per PUBLISH, what happens between its
    version check and its write (None: nothing), as the real server lets happen."""

    def __init__(self, mock, *bodies):
        self.versions = list(bodies)  # version n is versions[n - 1]
        self.race = []
        self.lag = None  # a version whose body the unversioned FETCH shows under the newest number
        self.server_error = None  # "after storing" or "instead": the next PUBLISH answers server-error
        self.lose_answer = False  # the next PUBLISH is stored, and its answer lost
        self.after_fetch = {}  # path: what happens once it has been read
        self.gone = set()  # versions the server let go (its retention): not-found by number
        self.failing = {}  # path: how its next reads fail, in order ("server-error", "lost" or "empty")
        self.requests = []
        self.published = []  # the bodies PUBLISHed, in order
        for verb in ("FETCH", "PUBLISH", "VERSIONS"):
            mock.add_callback(verb, re.compile(re.escape(URL) + "/.*"), self.answer)

    def answer(self, request):
        path = request.path_url
        metadata, body = mc.read_frontmatter(request.body.decode()) if request.body else ({}, "")
        self.requests.append((request.method, path))
        if request.method == "VERSIONS":
            return self.reply("ok", current=len(self.versions), total=len(self.versions))
        if request.method == "FETCH":
            if self.failing.get(path):
                how = self.failing[path].pop(0)
                if how == "lost":
                    raise requests.ConnectionError("the answer was lost on its way back")
                if how == "empty":  # the real server, reading a version file it is still writing
                    return self.reply("ok", "", version=path.rsplit("/v", 1)[1])
                return self.reply("server-error", "\n# Server error\n\ninternal error\n")
            answer = self.read(path)
            if path in self.after_fetch:
                self.after_fetch.pop(path)(self)
            return answer
        self.published.append(body)
        return self.publish(int(metadata["expected-version"]), body)

    def read(self, path):
        number = re.fullmatch(r"/p/v(\d+)", path)
        if number:
            n = int(number.group(1))
            if not 1 <= n <= len(self.versions) or n in self.gone:
                return self.reply("not-found", "\n# Not found\n\nno such version\n")
            return self.reply("ok", self.versions[n - 1], version=n, current_version=len(self.versions))
        shown = self.versions[(self.lag or len(self.versions)) - 1]
        return self.reply("ok", shown, version=len(self.versions))

    def publish(self, expected, body):
        if self.server_error == "instead":
            return self.reply("server-error", "\n# Server error\n\ninternal error\n")
        if expected != len(self.versions):
            return self.reply("conflict", your_version=expected, server_version=len(self.versions))
        happening = self.race.pop(0) if self.race else None
        if happening:
            happening(self)
        self.versions.append(body)
        stored = len(self.versions)
        if self.server_error == "after storing":
            self.server_error = None
            return self.reply("server-error", "\n# Server error\n\ninternal error\n")
        if self.lose_answer:
            self.lose_answer = False
            raise requests.ConnectionError("the answer was lost on its way back")
        if stored != expected + 1:
            return self.reply("conflict", your_version=expected, server_version=stored)
        return self.reply("created", version=stored)

    @staticmethod
    def reply(status, body="", **metadata):
        metadata["status"] = status
        text = mc.write_frontmatter({k.replace("_", "-"): str(v) for k, v in metadata.items()}) + body
        return 200, {"Content-Length": str(len(text.encode()))}, text

    def publishes(self):
        return [path for verb, path in self.requests if verb == "PUBLISH"]


def lands(body):
    """Another writer's publish, landing in the middle of ours."""
    return lambda fake: fake.versions.append(body)


@pytest.fixture
def fake():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield lambda *bodies: FakeMark(mock, *bodies)


@pytest.fixture
def client():
    with MarkClient(URL, token=TOKEN) as c:
        yield c


def test_a_stale_write_is_merged_with_what_it_overwrote(fake, client):
    server = fake(BASE)
    server.race = [lands(THEIRS)]  # ours, sent against v1, is stored as v3 over their v2
    res = mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    both = BASE.replace("Intro.", "Intro, ours.").replace("End.", "End, theirs.")
    assert server.versions == [BASE, THEIRS, OURS, both]
    assert (res.status, res.version, res.merged, res.repaired, res.body) == ("ok", 4, True, 2, both)
    assert "repaired: 2\n" in res.to_text()


def test_a_stale_write_that_overlaps_what_it_overwrote_is_undone(fake, client):
    rival = BASE.replace("Intro.", "Intro, theirs.")  # the same line as ours
    server = fake(BASE)
    server.race = [lands(rival)]
    res = mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    assert server.versions == [BASE, rival, OURS, rival]  # v4 restores v2: our edit is not published
    assert (res.status, res.current_version, res.mergeable, res.repaired) == ("conflict", 4, False, 2)
    assert "<<<<<<< ours\nIntro, ours.\n=======\nIntro, theirs.\n>>>>>>> theirs\n" in res.body


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["LF", "CRLF"])
@pytest.mark.parametrize("mode", ["merge", "fail", "candidate"])
def test_a_writer_that_built_on_the_stale_write_makes_it_raise_naming_the_lost_version(fake, client, mode, eol):
    base, ours = BASE.replace("\n", eol), OURS.replace("\n", eol)
    first = base.replace(f"Middle.{eol}", f"Middle.{eol}X1{eol}")  # X's edit, told it landed as v2
    server = fake(base)
    server.race = [lands(first)]  # ours lands as v3 over it
    # X goes on from what it reads next, v3, which lacks X1: X2 lands where X1 stood.  Neither
    # merging X1 back (it meets X2) nor undoing ours (X built on it) restores v2 exactly.
    server.after_fetch = {"/p/v3": lands(ours.replace(f"Middle.{eol}", f"Middle.{eol}X2{eol}"))}
    with pytest.raises(MarkError, match="over version 2") as caught:
        mark_publish(client, "/p", ours, 1, on_conflict=mode)
    assert (caught.value.status, caught.value.metadata["lost-version"]) == ("overwritten", "2")
    assert server.versions[:4] == [base, first, ours, ours.replace(f"Middle.{eol}", f"Middle.{eol}X2{eol}")]
    # Nothing published after: no guess, and never a marker line (this once published both, or markers).
    assert len(server.versions) == 4
    assert not any(line.startswith(("<<<<<<<", ">>>>>>>")) for text in server.versions for line in text.splitlines())


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["LF", "CRLF"])
@pytest.mark.parametrize("mode", ["merge", "fail", "candidate"])
def test_a_stale_write_is_put_back_when_the_base_is_gone(fake, client, mode, eol):
    # Merge mode read the base first and, with it gone, answered base-unavailable and left
    # ours stored as v3 over their v2: their edit gone from the document, and no error naming it.
    base, ours, theirs = (text.replace("\n", eol) for text in (BASE, OURS, THEIRS))
    server = fake(base)
    server.race = [lands(theirs)]  # ours, sent against v1, is stored as v3 over their v2
    server.gone = {1}  # and the server has let v1, the base, go
    res = mark_publish(client, "/p", ours, 1, on_conflict=mode)
    assert server.versions == [base, theirs, ours, theirs]  # v4, the undo, is v2's body again
    assert (res.status, res.your_version, res.current_version, res.repaired) == ("conflict", 1, 4, 2)
    assert res.reason == (None if mode == "fail" else "base-unavailable")
    assert ("FETCH", "/p/v3") in server.requests  # looked at, not merged with: ours is not published


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_stale_write_that_cannot_be_put_back_raises_when_the_base_is_gone(fake, client, eol):
    base, ours, theirs = (text.replace("\n", eol) for text in (BASE, OURS, THEIRS))
    server = fake(base)
    server.race = [lands(theirs)]  # ours is stored as v3 over their v2
    server.gone = {1}
    server.after_fetch = {"/p/v3": lands(ours.replace("Middle.", "Middle, X."))}  # X builds on v3 at once
    with pytest.raises(MarkError, match="over version 2") as caught:
        mark_publish(client, "/p", ours, 1, on_conflict="merge")
    assert (caught.value.status, caught.value.metadata["lost-version"]) == ("overwritten", "2")
    assert len(server.versions) == 4  # nothing published after X's


def test_merge_and_publish_finds_its_own_stale_write_before_it_needs_the_base(fake, client):
    server = fake(BASE)
    server.race = [lands(THEIRS)]
    assert client.publish("/p", OURS, 1).status == "conflict"  # the caller's own PUBLISH: stored as v3
    server.gone = {1}
    res = merge_and_publish(client, "/p", OURS, 1)
    assert server.versions == [BASE, THEIRS, OURS, THEIRS]
    assert (res.status, res.reason, res.current_version, res.repaired) == ("conflict", "base-unavailable", 4, 2)


def test_fail_mode_undoes_its_stale_write(fake, client):
    server = fake(BASE)
    server.race = [lands(THEIRS)]
    res = mark_publish(client, "/p", OURS, 1)
    assert server.versions == [BASE, THEIRS, OURS, THEIRS]
    assert res.to_text() == "status: conflict\nyour-version: 1\ncurrent-version: 4\nrepaired: 2\n"


def test_candidate_mode_undoes_its_stale_write_and_merges_onto_the_restored_version(fake, client):
    server = fake(BASE)
    server.race = [lands(THEIRS)]
    res = mark_publish(client, "/p", OURS, 1, on_conflict="candidate")
    assert server.versions == [BASE, THEIRS, OURS, THEIRS]
    assert (res.status, res.publish_at_version, res.has_markers, res.repaired) == ("merge-candidate", 4, False, 2)
    assert res.body == BASE.replace("Intro.", "Intro, ours.").replace("End.", "End, theirs.")


def test_a_stale_merge_is_repaired_too(fake, client):
    later = THEIRS.replace("Middle.", "Middle, third.")
    server = fake(BASE, THEIRS)
    server.race = [lands(later)]  # our PUBLISH conflicts plainly; our merge, sent against v2, lands over v3
    res = mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    everything = later.replace("Intro.", "Intro, ours.")
    assert server.versions[2] == later and server.versions[-1] == everything
    assert (res.status, res.version, res.repaired) == ("ok", len(server.versions), 3)


def test_a_stale_merge_is_undone_when_the_version_it_was_made_against_is_gone(fake, client, monkeypatch):
    # This raised not-found, naming neither v3 nor that it had been overwritten.
    monkeypatch.setattr(mc, "CACHED_VERSIONS", 0)  # v2, read a round ago, has left the cache
    later = THEIRS.replace("Middle.", "Middle, third.")
    server = fake(BASE, THEIRS)
    server.race = [lands(later)]  # our merge, sent against v2, lands as v4 over v3
    server.after_fetch = {"/p/v4": lambda fake: fake.gone.add(2)}  # and the server lets v2 go
    res = mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    everything = later.replace("Intro.", "Intro, ours.")
    assert server.versions[4:] == [later, everything]  # v5 is v3 again (the undo), v6 ours merged onto it
    assert (res.status, res.version, res.repaired) == ("ok", 6, 3)


def test_a_server_error_after_storing_is_found_and_repaired(fake, client):
    server = fake(BASE)
    server.race = [lands(THEIRS)]
    server.server_error = "after storing"
    res = mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    assert server.versions[-1] == BASE.replace("Intro.", "Intro, ours.").replace("End.", "End, theirs.")
    assert (res.status, res.repaired) == ("ok", 2)


def test_a_lost_answer_to_a_stale_write_is_found_and_repaired(fake, client):
    server = fake(BASE)
    server.race = [lands(THEIRS)]
    server.lose_answer = True
    res = mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    assert server.versions[-1] == BASE.replace("Intro.", "Intro, ours.").replace("End.", "End, theirs.")
    assert (res.status, res.repaired) == ("ok", 2)


def test_a_server_error_that_stored_nothing_raises(fake, client):
    server = fake(BASE)
    server.server_error = "instead"
    with pytest.raises(MarkError, match="internal error") as caught:
        mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    assert caught.value.status == "server-error" and server.versions == [BASE]


def test_theirs_is_read_by_number_when_the_latest_lags(fake, client):
    server = fake(BASE, THEIRS, THEIRS.replace("Middle.", "Middle, third."))
    server.lag = 2  # FETCH /p answers version 3 with v2's body
    res = merge_and_publish(client, "/p", OURS, 1)
    assert res.status == "ok" and "Middle, third." in server.versions[-1] and "Intro, ours." in server.versions[-1]


def test_fetch_of_the_latest_gives_the_body_its_number_names(fake, client):
    server = fake(BASE, THEIRS)
    server.lag = 1  # FETCH /p answers version 2 with v1's body
    latest = client.fetch("/p")
    assert (latest.metadata["version"], latest.body) == ("2", THEIRS)
    assert latest.metadata["content-hash"] == "sha256-" + hashlib.sha256(THEIRS.encode()).hexdigest()
    assert "etag" not in latest.metadata
    server.lag = None
    assert client.fetch("/p").body == THEIRS and server.requests[-1] == ("FETCH", "/p")  # v2 is cached


def test_created_as_an_unexpected_version_is_an_error(client):
    with responses.RequestsMock() as mock:
        mock.add("PUBLISH", URL + "/p", body='---\nstatus: created\nversion: "9"\n---\n',
                 auto_calculate_content_length=True)
        with pytest.raises(MarkError, match="created as version 9 to a write at expected-version 1") as caught:
            mark_publish(client, "/p", OURS, 1)
    assert caught.value.may_have_landed  # a script can tell: fetch before retrying
    assert caught.value.metadata == {"version": "9"}  # and see the version the server named


def test_a_huge_version_number_is_a_mark_error(client):
    with responses.RequestsMock() as mock:
        mock.add("PUBLISH", URL + "/p", body=f'---\nstatus: created\nversion: "{"7" * 5000}"\n---\n',
                 auto_calculate_content_length=True)
        with pytest.raises(MarkError, match="version"):
            mark_publish(client, "/p", OURS, 1)


def test_an_answer_without_length_needs_its_content_hash(client):
    body = "# Hello\n"
    digest = "sha256-" + hashlib.sha256(body.encode()).hexdigest()
    with responses.RequestsMock() as mock:
        mock.add("FETCH", URL + "/p", body=f"---\nstatus: ok\nversion: 1\n---\n{body}")
        mock.add("FETCH", URL + "/p", body=f"---\ncontent-hash: {digest}\nstatus: ok\nversion: 1\n---\n{body}")
        with pytest.raises(MarkError, match="no length and no content-hash"):
            client.request("FETCH", "/p")
        assert client.request("FETCH", "/p").body == body


@pytest.mark.parametrize("status", [429, 503])
def test_http_refusals_are_sent_again_after_retry_after(client, status):
    with responses.RequestsMock() as mock:
        mock.add("FETCH", URL + "/p", status=status, headers={"Retry-After": "0"})
        mock.add("FETCH", URL + "/p", body='---\nstatus: ok\nversion: "1"\n---\nhi\n',
                 auto_calculate_content_length=True)
        assert client.request("FETCH", "/p").body == "hi\n"
        assert len(mock.calls) == 2


def test_an_http_server_that_keeps_refusing_is_refused(client, monkeypatch):
    monkeypatch.setattr(mc, "REFUSED_TRIES", 3)
    with responses.RequestsMock() as mock:
        for _ in range(3):
            mock.add("PUBLISH", URL + "/p", status=429, headers={"Retry-After": "0"})
        with pytest.raises(MarkError, match="refused the last send without handling it .*, 3 sends in all") as caught:
            mark_publish(client, "/p", OURS, 1)
    assert caught.value.status == "refused"


def test_a_retry_after_past_the_deadline_gives_up_at_once(monkeypatch):
    with responses.RequestsMock() as mock:
        mock.add("FETCH", URL + "/p", status=429, headers={"Retry-After": "60"})
        with pytest.raises(MarkError, match="refused the last send without handling it .*, 1 send in all"):
            MarkClient(URL, timeout=2).fetch("/p")


SECTIONED = "# Doc\n\n## One\n\nIntro.\n\n## Two\n\nEnd.\n"


def test_a_stale_section_write_is_merged_with_what_it_overwrote(fake, client):
    theirs = SECTIONED.replace("End.", "End, theirs.")
    server = fake(SECTIONED)
    server.race = [lands(theirs)]  # our section, sent against v1, is stored as v3 over their v2
    res = update_section(client, "/p", "## One", "## One\n\nIntro, ours.\n\n")
    ours = SECTIONED.replace("Intro.", "Intro, ours.")
    both = ours.replace("End.", "End, theirs.")
    assert server.versions == [SECTIONED, theirs, ours, both]
    assert (res.status, res.version, res.merged, res.repaired, res.section, res.body) == ("ok", 4, True, 2, "#one", both)


def test_a_section_write_whose_answer_was_lost_is_found(fake, client):
    server = fake(SECTIONED)
    server.lose_answer = True  # stored as v2, its answer lost on the way back
    res = update_section(client, "/p", "#two", "## Two\n\nEnd, ours.\n", expected_version=1)
    assert server.versions == [SECTIONED, SECTIONED.replace("End.", "End, ours.")]
    assert res.to_text() == "status: ok\nversion: 2\nsection: #two\nmerged: false\n"
    assert server.publishes() == ["/p"]  # found by reading back, not sent twice


@pytest.mark.parametrize("lost_answer", [False, True], ids=["answered", "answer-lost"])
def test_an_undo_that_lands_over_another_writer_raises_naming_that_version(fake, client, lost_answer):
    ours = BASE.replace("Intro.\n", "Intro.\nOurs.\n")
    server = fake(BASE)
    # Ours lands as v3 over their v2; X builds on v3 between the undo's check and its write, so
    # the undo (v2's body again) is stored as v5 over X's v4: v2 is back, X's edit is not.
    server.race = [lands(THEIRS), lambda fake: fake.versions.append(fake.versions[-1].replace("Intro.", "Intro, X."))]
    server.lose_answer = lost_answer
    with pytest.raises(MarkError, match="over version 4") as caught:
        mark_publish(client, "/p", ours, 1)
    assert (caught.value.status, caught.value.metadata["lost-version"]) == ("overwritten", "4")
    assert server.versions == [BASE, THEIRS, ours, ours.replace("Intro.", "Intro, X."), THEIRS]
    assert len(server.publishes()) == 2  # the write and its undo: never a merge in fail mode


@pytest.mark.parametrize("mode", ["fail", "candidate"])
def test_an_undone_edit_that_only_reorders_lines_is_not_answered_ok(fake, client, mode):
    ours = BASE.replace("Intro.\n\nMiddle.", "Middle.\n\nIntro.")  # the same lines, in another order
    server = fake(BASE)
    server.race = [lands(THEIRS)]  # ours lands as v3 over their v2, and is undone
    res = mark_publish(client, "/p", ours, 1, on_conflict=mode)
    assert server.versions == [BASE, THEIRS, ours, THEIRS]
    assert (res.status, res.repaired) == ("conflict" if mode == "fail" else "merge-candidate", 2)


def test_random_races_lose_nothing_and_answer_truly(monkeypatch):
    """Writers land at random between our checks and writes, after our reads, and answers get
    lost: whatever the call answers, every line another writer was told landed is in the
    document, and the call's own line is there exactly when it answers ok (or when its
    unpublished candidate is the document as it is); or the call raises "overwritten", and
    what is missing is in the version it names.  It never sends more than its budget of
    PUBLISHes, and never publishes a marker line."""
    monkeypatch.setattr(mp, "RETRY_PAUSE", 0)
    rng = random.Random(16)  # its races once made a fail-mode call answer conflict for an edit in place
    for case in range(400):
        told, count = [], itertools.count()

        def lands_now(fake):
            line, latest = f"other {next(count)}", fake.versions[-1]
            if rng.random() < 0.3 and "\nW0's intro.\n" in latest:  # the line ours may edit too
                fake.versions.append(latest.replace("\nW0's intro.\n", f"\n{line}\n"))
            else:
                fake.versions.append(add_line(latest, rng.choice(["W1", "W2"]), line))
            told.append(line)

        with responses.RequestsMock(assert_all_requests_are_fired=False) as mock, \
                MarkClient(URL, token=TOKEN) as client:
            server = FakeMark(mock, sectioned_document(["W0", "W1", "W2"]))
            for _ in range(rng.randint(0, 3)):
                lands_now(server)
            expected = rng.randint(1, len(server.versions))
            edited, line = server.versions[expected - 1], f"ours {case}"
            ours = (edited.replace("\nW0's intro.\n", f"\n{line}\n")
                    if rng.random() < 0.4 and "\nW0's intro.\n" in edited else add_line(edited, "W0", line))
            server.race = [lands_now if rng.random() < 0.5 else None for _ in range(rng.randint(0, 4))]
            server.lose_answer = rng.random() < 0.15
            server.after_fetch = {rng.choice(["/p", f"/p/v{rng.randint(1, expected + 3)}"]): lands_now}
            mode = rng.choice(["merge", "fail", "candidate", "section"])
            try:
                if mode == "section":
                    res = update_section(client, "/p", "## W0", section_of(ours, "W0"), expected_version=expected)
                else:
                    res = mark_publish(client, "/p", ours, expected, on_conflict=mode)
            except MarkError as error:
                assert error.status == "overwritten", case
                res = error
        final = server.versions[-1]
        # one budget per call: the write and max_retries more, and a repair's own allowance
        assert len(server.publishes()) <= 1 + 3 + mp.REPAIR_PUBLISHES, case
        if mode in ("fail", "candidate"):  # never a merge: the caller's body, or an undo (an earlier version's)
            assert all(sent == ours or sent in server.versions[:-1] for sent in server.published), case
        assert not any(line.startswith(("<<<<<<<", "=======", ">>>>>>>")) for text in server.versions
                       for line in text.splitlines()), case
        missing = [told_line for told_line in told if f"\n{told_line}\n" not in final]
        if isinstance(res, MarkError):  # what is missing is what the error names, and nothing else
            lost = server.versions[int(res.metadata["lost-version"]) - 1]
            assert missing and all(f"\n{told_line}\n" in lost for told_line in missing), case
            continue
        assert missing == [], case
        published = f"\n{line}\n" in final
        assert published == (res.status == "ok") or res.status == "merge-candidate" and res.body == final, case


def test_a_section_write_without_a_version_merges_with_a_writer_during_the_call(fake, client):
    doc = "# Doc\n\n## One\n\nFirst.\n\nSecond.\n\n## Two\n\nEnd.\n"
    theirs = doc.replace("Second.", "Second, theirs.")
    server = fake(doc)
    server.after_fetch = {"/p": lands(theirs)}  # lands right after the call reads the newest version
    res = update_section(client, "/p", "## One", "## One\n\nFirst, ours.\n\nSecond.\n\n")
    both = theirs.replace("First.", "First, ours.")
    assert server.versions == [doc, theirs, both]
    assert (res.status, res.merged, res.base_version, res.their_version) == ("ok", True, 1, 2)


# ------------------------------------------------------------ mark_publish's wire table, row by row

def wire_table_row(fake, monkeypatch, row):
    """Play one row of mark_publish's wire table: the requests its call sent, in order."""
    monkeypatch.setattr(mp, "RETRY_PAUSE", 0)  # the pause is random; its length is not what is tested
    rival = BASE.replace("Intro.", "Intro, theirs.")  # overlaps OURS
    server = fake(*{"no race": [BASE], "landed after all": [BASE, OURS], "stale write": [BASE],
                    "merge, overlap": [BASE, rival]}.get(row.split(":")[0], [BASE, THEIRS]))
    mode, retries = {"fail": "fail", "candidate": "candidate", "stale write: fail": "fail"}.get(row, "merge"), 3
    if row == "base gone":
        server.gone = {1}
    if row == "C unread":
        server.failing = {"/p/v2": ["server-error"] * mp.READS}
    if row.startswith("lost again"):  # another writer while the base is read, and (with PUBLISHes left) one more
        server.after_fetch = {"/p/v1": lands(THEIRS + "More.\n"), "/p/v3": lands(THEIRS + "Most.\n")}
        retries = 1 if row == "lost again: no PUBLISH left" else 3
    if row.startswith("stale write"):
        server.race = [lands(THEIRS)]  # ours, at 1, is stored as 3 over their 2
    expected = []
    publish = server.publish
    server.publish = lambda at, body: (expected.append(at), publish(at, body))[1]
    with MarkClient(URL, token=TOKEN) as client:
        try:
            mark_publish(client, "/p", OURS, 1, on_conflict=mode, max_retries=retries)
        except MarkError as error:
            assert (row, error.metadata) == ("C unread", {"unread-version": "2"})
    at = iter(expected)
    return [f"{verb} {path}" + (f" at {next(at)}" if verb == "PUBLISH" else "") for verb, path in server.requests]


WIRE_TABLE = {  # as mark_publish's docstring has it, with E = 1 and C = 2 (a stale write: C = 3, L = 2)
    "no race": ["PUBLISH /p at 1"],
    "landed after all": ["PUBLISH /p at 1", "FETCH /p/v2"],
    "fail": ["PUBLISH /p at 1", "FETCH /p/v2"],
    "candidate": ["PUBLISH /p at 1", "FETCH /p/v2", "FETCH /p/v1"],
    "merge": ["PUBLISH /p at 1", "FETCH /p/v2", "FETCH /p/v1", "PUBLISH /p at 2"],
    "merge, overlap": ["PUBLISH /p at 1", "FETCH /p/v2", "FETCH /p/v1"],
    "base gone": ["PUBLISH /p at 1", "FETCH /p/v2", "FETCH /p/v1", "FETCH /p"],
    "C unread": ["PUBLISH /p at 1"] + ["FETCH /p/v2"] * mp.READS,
    "lost again": ["PUBLISH /p at 1", "FETCH /p/v2", "FETCH /p/v1", "PUBLISH /p at 2", "FETCH /p/v3",
                   "FETCH /p", "FETCH /p/v4", "PUBLISH /p at 4"],
    "lost again: no PUBLISH left": ["PUBLISH /p at 1", "FETCH /p/v2", "FETCH /p/v1", "PUBLISH /p at 2", "FETCH /p/v3"],
    "stale write: fail": ["PUBLISH /p at 1", "FETCH /p/v3", "FETCH /p/v2", "PUBLISH /p at 3"],
    "stale write: merge": ["PUBLISH /p at 1", "FETCH /p/v3", "FETCH /p/v1", "FETCH /p/v2", "PUBLISH /p at 3"],
}


@pytest.mark.parametrize("row", WIRE_TABLE)
def test_each_row_of_the_wire_table(fake, monkeypatch, row):
    assert wire_table_row(fake, monkeypatch, row) == WIRE_TABLE[row]
    assert f"\n    {row.split(':')[0]:<16} " in mp.__doc__  # the docstring has the row


# ---------------------------------------- an unread C, and repairs that outlast the caller's retries

@pytest.mark.parametrize("failure", ["server-error", "lost", "empty"])
@pytest.mark.parametrize("mode", ["fail", "candidate", "merge"])
def test_a_stale_write_is_found_when_its_first_read_fails(fake, client, mode, failure):
    # Fail mode answered `conflict` and candidate mode a merge-candidate at v3 as if nothing of
    # ours had landed: their v2, told it landed, stayed overwritten and nothing said so.
    server = fake(BASE)
    server.race = [lands(THEIRS)]  # ours, sent against v1, is stored as v3 over their v2
    server.failing = {"/p/v3": [failure]}
    res = mark_publish(client, "/p", OURS, 1, on_conflict=mode)
    assert res.repaired == 2 and "End, theirs." in server.versions[-1]


@pytest.mark.parametrize("mode", ["fail", "candidate", "merge"])
def test_a_named_version_that_cannot_be_read_raises_naming_it(fake, client, mode):
    server = fake(BASE)
    server.race = [lands(THEIRS)]
    server.failing = {"/p/v3": ["server-error", "lost"] * mp.READS}
    with pytest.raises(MarkError, match="version 3, which may be this call's write") as caught:
        mark_publish(client, "/p", OURS, 1, on_conflict=mode)
    assert (caught.value.may_have_landed, caught.value.metadata["unread-version"]) == (True, "3")
    assert server.versions == [BASE, THEIRS, OURS] and server.publishes() == ["/p"]  # nothing more published


def test_a_repair_may_spend_more_publishes_than_the_callers_retries(fake, client, monkeypatch):
    # With one retry the repair had one PUBLISH: it lost its race and raised "overwritten: no PUBLISH
    # was left to put it back", leaving their v2 out of the document.
    monkeypatch.setattr(mp, "RETRY_PAUSE", 0)
    server = fake(BASE)
    # Ours lands as v3 over their v2; the repair's merge then loses two races to X and Y.
    server.race = [lands(THEIRS), lands(OURS.replace("Middle.", "Middle, X.")),
                   lambda fake: fake.versions.append(fake.versions[-1].replace("# Doc", "# Doc, Y"))]
    res = mark_publish(client, "/p", OURS, 1, on_conflict="merge", max_retries=1)
    assert (res.status, res.repaired) == ("ok", 2)
    final = server.versions[-1]
    assert all(line in final for line in ("Intro, ours.", "End, theirs.", "Middle, X.", "# Doc, Y")), final
    assert len(server.publishes()) == 4 > 1 + 1  # our write, and three for the repair


def test_a_repair_that_keeps_losing_raises_after_its_stated_publishes(fake, client, monkeypatch):
    monkeypatch.setattr(mp, "RETRY_PAUSE", 0)
    server = fake(BASE)
    server.race = [lands(THEIRS)]  # ours is stored as v3 over their v2
    count, publish = itertools.count(), server.publish

    def another_writer_first(at, body):  # every later PUBLISH loses plainly: someone landed just before it
        if server.published[1:]:
            server.versions.append(server.versions[-1] + f"Other {next(count)}.\n")
        return publish(at, body)

    server.publish = another_writer_first
    pauses = []
    monkeypatch.setattr(mp.time, "sleep", pauses.append)
    with pytest.raises(MarkError, match="over version 2") as caught:
        mark_publish(client, "/p", OURS, 1, on_conflict="merge", max_retries=1)
    assert caught.value.status == "overwritten"
    assert len(server.publishes()) == 1 + mp.REPAIR_PUBLISHES  # our write, then the repair's own allowance
    assert len(pauses) == mp.REPAIR_PUBLISHES - 1  # a random pause after each lost race but the last


# A version empty at every read may be one the real server is still writing: never taken as empty
# (the old code did: C "not ours", the base merged from as "", L's "" published as the undo).

@pytest.mark.parametrize("mode", ["fail", "candidate", "merge"])
def test_a_named_version_empty_at_every_read_raises_naming_it(fake, client, mode):
    server = fake(BASE)
    server.race = [lands(THEIRS)]  # ours, sent against v1, is stored as v3 over their v2
    server.failing = {"/p/v3": ["empty"] * mp.READS}  # v3, ours, still being written at every read
    with pytest.raises(MarkError, match="version 3, which may be this call's write.*empty") as caught:
        mark_publish(client, "/p", OURS, 1, on_conflict=mode)
    assert (caught.value.may_have_landed, caught.value.metadata["unread-version"]) == (True, "3")
    assert server.publishes() == ["/p"] and server.requests[1:] == [("FETCH", "/p/v3")] * mp.READS


@pytest.mark.parametrize("mode", ["candidate", "merge"])
def test_a_base_empty_at_every_read_is_not_merged_from(fake, client, mode):
    server = fake(BASE, THEIRS)
    server.failing = {"/p/v1": ["empty"] * mp.READS}
    with pytest.raises(MarkError, match=r"/p/v1 answered ok and empty at each of 4 reads") as caught:
        mark_publish(client, "/p", OURS, 1, on_conflict=mode)
    assert caught.value.may_have_landed is False  # nothing of ours landed: v2 is theirs
    assert server.versions == [BASE, THEIRS] and server.publishes() == ["/p"]


@pytest.mark.parametrize("mode", ["fail", "merge"])
def test_a_lost_version_empty_at_every_read_is_not_put_back_as_empty(fake, client, mode):
    server = fake(BASE)
    server.race = [lands(THEIRS)]  # ours is stored as v3 over their v2
    server.failing = {"/p/v2": ["empty"] * mp.READS}
    with pytest.raises(MarkError, match="over version 2.*could not be read") as caught:
        mark_publish(client, "/p", OURS, 1, on_conflict=mode)
    assert (caught.value.status, caught.value.metadata["lost-version"]) == ("overwritten", "2")
    assert server.versions == [BASE, THEIRS, OURS] and server.publishes() == ["/p"]  # no "" published over v3


@pytest.mark.parametrize("failure", ["server-error", "empty"])
def test_a_base_unread_after_a_stale_write_raises_once_the_write_is_undone(fake, client, failure):
    # The error said may_have_landed False, and their v2 stayed overwritten by ours.
    server = fake(BASE)
    server.race = [lands(THEIRS)]  # ours is stored as v3 over their v2
    server.failing = {"/p/v1": [failure] * mp.READS}
    with pytest.raises(MarkError, match="/p/v1.*this call's write, stored over version 2, was undone") as caught:
        mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    assert caught.value.may_have_landed is True
    assert server.versions == [BASE, THEIRS, OURS, THEIRS]  # their v2 is back


def test_an_empty_body_of_ours_is_found_in_a_version_empty_at_every_read(fake, client):
    # The one empty read that decides: an empty body is what an empty write of ours looks like.
    server = fake(BASE)
    server.race = [lands(THEIRS)]  # our "", sent against v1, is stored as v3 over their v2
    res = mark_publish(client, "/p", "", 1)
    assert (res.status, res.repaired, server.versions) == ("conflict", 2, [BASE, THEIRS, "", THEIRS])
    assert server.requests.count(("FETCH", "/p/v3")) == mp.READS  # read again, then believed


def test_a_repair_publishes_only_within_the_calls_time(fake):
    server = fake(BASE)
    server.race = [lands(THEIRS)]  # ours is stored as v3 over their v2
    with MarkClient(URL, token=TOKEN, timeout=1e-9) as client:  # the call's time is out once it has begun
        with pytest.raises(MarkError, match="over version 2.*the call's time") as caught:
            mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    assert caught.value.status == "overwritten" and server.publishes() == ["/p"]  # no repair PUBLISH after it


def test_a_merge_found_landed_after_a_conflict_names_the_version_it_was_merged_onto(fake, client):
    # The merge published at 2 is stored as 3, but answered conflict naming 3 (a lost answer's
    # resend, as the client hands it back): the loop finds it landed, and their-version is 2,
    # the version the merge was made onto, as when the PUBLISH is answered created.
    server = fake(BASE, THEIRS)
    plain = server.publish
    server.publish = lambda expected, body: (
        plain(expected, body) and server.reply("conflict", your_version=2, server_version=3)
        if expected == 2 else plain(expected, body))
    res = mark_publish(client, "/p", OURS, 1, on_conflict="merge")
    both = BASE.replace("Intro.", "Intro, ours.").replace("End.", "End, theirs.")
    assert server.versions == [BASE, THEIRS, both]
    assert (res.status, res.version, res.merged, res.base_version, res.their_version, res.body) == \
        ("ok", 3, True, 1, 2, both)
    assert server.publishes() == ["/p", "/p"]
