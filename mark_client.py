"""The Mark client: one blocking call per Mark request, over HTTP(S) or QUIC.

    >>> import tempfile
    >>> from mark_server import serve                     # a reference server to try it on
    >>> server = serve(tempfile.mkdtemp(), token="dev-secret", log=None)
    >>> from mark_client import MarkClient
    >>> client = MarkClient(server.url, token="dev-secret")   # or "mark://host"
    >>> client.publish("/notes.md", "# Notes\\n", expected_version=0).status
    'created'
    >>> page = client.fetch("/notes.md")                  # MarkResponse(status, metadata, body)
    >>> page.status, page.number("version"), page.body
    ('ok', 1, '# Notes\\n')
    >>> client.close(); server.close()

`MarkClient` sends one Mark request per call and returns the server's
answer, whatever its Mark status (`ok`, `created`, `conflict`,
`not-found`, `server-error`, ...), as `MarkResponse(status, metadata,
body)`: the kinds of answer it returns, and where MarkError is raised,
are listed below.  Bad arguments raise ValueError or TypeError, naming
the argument, before anything is sent: a path that is not a str starting
with "/", metadata that is not a mapping with str keys and values, or that
holds a key this client writes itself, a verb not of upper-case ASCII
letters, ....  The token travels as `auth` metadata in the body, never in
a URL, a repr or an error; plain http:// gets it for loopback hosts only
and through no proxy, unless `allow_insecure_http=True` (`MarkClient`
says how it is checked).  Exceptions to "one request per call":
`fetch(path)` also reads the version the answer names (`fetch` says why),
a write whose outcome is unknown is looked up (the table's "look"), and
resends, as the table says.

The wire.  `http(s)://` is Mark over HTTP: the verb is the HTTP method,
the Mark request is the HTTP body, sent to base_url + the path
percent-encoded ("#" included); redirects are never followed, and an
answer is an HTTP 200.  `mark://` is Mark over QUIC, through mark_quic.py.
An answer is believed only whole: at most MAX_RESPONSE_BYTES (given up on
while it arrives), not compressed, as long as its Content-Length says
(else chunked, or carrying a `content-hash`), its body matching its
`content-hash`.

`timeout` (seconds) is the deadline of one request, set before its first
send: its connect, every read of its answer (status line and headers
included, so a server that drips its answer is cut off: see the deadline's
section at the end of this file) and the pauses before its resends fit in
it (a resend goes only if its pause ends before it); sending is bounded
per write to the socket, not in all.  A look-up runs inside it but each of
its Mark requests (a VERSIONS and up to _LOOK_AHEAD FETCHes; an APPEND's
also the version before each candidate whose metadata matches: all but
the first's are the candidate before it, which the cache answers unless
empty) has a deadline of its own, `timeout` from its start, so a request
that looks up can end past its deadline (and then sends nothing more).
Nor is it a limit for a whole call: `fetch(path)` makes two Mark requests
(the second reads a version by number, which the cache may answer), each
a request of its own in this table, sent again as it says.  No thread is
started for it.

What a request can meet, and what the client does.  A read is FETCH, LIST
or VERSIONS; a write with E is `publish(..., expected_version=E)` or
`append`; a write without is `publish` without it, or any other verb
through `request`.  Each exchange comes back as one row of this table, and
`_ACTIONS` holds its cells, one line each: `_send` does what they say.

    row: what came back                   read     write with E                 write without E
    ------------------------------------  -------  ---------------------------  ---------------
    unsent: could not connect (TCP, a     error    error                        error
      proxy's tunnel, the TLS handshake)
    refused: HTTP 429 or 503, or an       again    again                        again
      empty QUIC answer (not handled)
    closed: closed before any answer, or  again    look, else again             landed?
      reset before its headers were whole
    lost: reset mid-body; a timeout (no   error    look, else landed?           landed?
      whole answer by the deadline); a
      short body (under Content-Length);
      oversized (over MAX_RESPONSE_BYTES);
      a hash mismatch (`content-hash`);
      not HTTP 200 (nor 429 or 503); not
      a Mark response, compressed, or no
      length and no content-hash
    server-error: a Mark answer           answer   look, else answer            answer
    conflict: a Mark answer               answer   look if resent, else answer  answer
    wrong version: `created` as a         -        landed?                      -
      version but E + 1, `ok` as neither
      E nor E + 1
    answer: any other Mark answer         answer   answer                       answer

- again: sent again after a pause (`_backoff`; `Retry-After` instead when
  it is a number of seconds, at most 5 digits: an HTTP date is ignored),
  over QUIC on a new connection, at most REFUSED_TRIES sends in all.  After
  the last, or at once when the pause would end past the deadline (a slow
  look-up can leave no time): MarkError("refused") for a refusal,
  MarkError("transport") for a closed connection.
- look: `_look_up` reads VERSIONS and the versions after E up to the
  current one (at most _LOOK_AHEAD), and takes the first that holds the
  write (`_holds_write`: its body, and every key of the caller's metadata
  with the same value) as the server's answer: a made-up `created` or
  `conflict` (the kinds of answer, below).  "look, else X": X when none
  holds it.  A look-up cannot tell when its own requests fail: VERSIONS
  answered other than `ok`; a version answered neither `ok` nor
  `not-found`, or `ok` and empty for a write that is not (a torn read,
  maybe of this very write: the cache, below); an APPEND's version before
  it answered other than `ok` (its body is believed as read).  Then
  `_CANNOT_TELL` turns "answer" into "landed?"; other actions stand.
- look if resent: a look-up only once an earlier copy of the write went
  out, which may be what the resend conflicts with (the first copy landed,
  and the look-up finds it first, even where the real server stored the
  resend too, as a stale write: below).  A first copy's `conflict` is
  returned as it came: it is the usual lost race, and a look-up would cost
  a VERSIONS and FETCHes each time; where the real server stored that copy
  anyway (its stale write), the conflict names the version holding it,
  which mark_publish reads.
- error: MarkError("transport").
- landed?: MarkError("transport") with `may_have_landed` True: the write
  went out and whether it was stored is unknown; fetch before retrying.
  The wrong-version row is never looked up: the server says it stored the
  write, but as a version the request rules out; the error's `metadata`
  is the server's.
- answer: the Mark answer, returned as it came.

Once a copy of a write went out (any row but unsent and refused), every
MarkError that ends the call has `may_have_landed` True, whatever its row
and status, and its message says whether an earlier copy went out and what
the look-ups found (each finding once, however many look-ups found it); a
read never sets it.  test_failures.py plays each
cell over HTTP (`_ACTIONS` names the tests).  Over QUIC (mark_quic.py) a
failed handshake is unsent, an empty answer is refused, and a connection
that closes mid-answer is lost, except that a read is first sent once more
on a new connection: a QUIC exchange is never closed.

Every kind of answer this client returns, as MarkResponse(status, metadata,
body).  `looked-up: true` is on a look-up's made-up answer only, and says
that the write IS stored, as the version the answer names:

- as it came: the server's status, every key of its metadata but
  `status`, its body (every method; `request` returns nothing else).
- a cached version: `fetch(path, version=N)` once it was read by number
  and answered `ok` with a body: that first answer, without
  `current-version`.
- a cached own PUBLISH: `fetch(path, version=N)` of a version this client
  PUBLISHed with E, with a body, and the server answered `ok` or `created`
  (not an APPEND, not a look-up's): `ok`, the caller's metadata and `version`
  (nothing the server adds, such as `modified`), the body sent.
- the reconciled `fetch(path)`, where the current document's body is not
  its version's: `ok`, the first answer's metadata without `etag` and with
  the numbered body's `content-hash`, the numbered body.
- a look-up's made-up answer, body "": `created` with `version` (E + 1),
  `modified` (that version's as the look-up read it, "" when that read
  was a cached own PUBLISH) and `looked-up: true`; or, stored later than
  E + 1, `conflict` with `server-version` (the version holding the write,
  not always the newest), `your-version` (E) and `looked-up: true`.  That
  `conflict` is not a refusal: the write is stored, as that version, after
  the versions between E and it (an APPEND onto them; a PUBLISH over them,
  the real server's stale write, which mark_publish puts right); sent
  again, it may be stored twice.

Every MarkError (status, may_have_landed), where it is raised:

- `_send`, as the table ends a request: ("transport", False) for "error"
  and a closed read given up; ("transport", True) for "landed?" and for
  any write error once a copy went out; ("refused", False), or True once
  an earlier copy of the write went out.
- `MarkResponse.number`: ("transport", False), no version under the key
  (inside a look-up: it cannot tell).
- `fetch(path)`: ("transport", False) when the version the current
  document names reads empty and the document does not (the cache, below).
- mark_quic.py's MarkErrors never reach the caller as they are: each is
  the unsent row (nothing went out) or the lost row (the request did).
- `MarkError.from_response`: the server's status, False; made by
  mark_publish and mark_sections, never raised here.  mark_publish raises
  ("overwritten", True) too, and a failed read's status with True and
  `unread-version` (its module docstring lists its raise sites).

The metadata keys this client itself writes or reads, each for one
thing: it writes `auth` (the token) and `expected-version` (E), so the
caller's metadata may hold neither; it reads `status` (every answer; taken
out of the metadata), `version` (what a FETCH read, what a write made),
`current-version` (a version's FETCH carries it, the current
document's does not; never cached), `content-hash` (checked against the body),
`etag` (dropped where it names another body), `current` (VERSIONS, for a
look-up) and `modified` (copied into a look-up's `created`); it makes up
`looked-up`, `server-version` and `your-version`.

Versions are immutable, so a version read by number (`fetch(path,
version=N)`, a look-up's reads included) is cached, the last
CACHED_VERSIONS used, and so is a version this client PUBLISHed with E,
as the kinds above say.  An empty body never is (`_keep`, the one place
that keeps a version, refuses it): the real server answers
`ok` and nothing for a version whose file it has made but not yet
written (a torn read), and its `content-hash` is the hash of the bytes it
read, so it matches: that check proves an answer came as it was sent,
not that the version was whole.  So an empty version is read again each
time, and `fetch(path)` raises rather than answer an empty numbered body
for a current document that has one (the newest version half written, or
an empty one behind a lagging link: nothing here tells which).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import random
import re
import socket
import time
from collections import OrderedDict
from http.client import RemoteDisconnected
from typing import Dict, Mapping, NamedTuple, Optional, Tuple, Union
from urllib.parse import quote, urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.utils import select_proxy
from urllib3 import Timeout
from urllib3 import exceptions as urllib3_exceptions
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__version__ = "0.3.0"  # the release this file is from; vendored copies keep saying it
__all__ = ["MarkClient", "MarkResponse", "MarkError", "read_frontmatter", "write_frontmatter", "write_scalar",
           "check_path", "check_int", "check_str"]

DEFAULT_TIMEOUT = 10.0
MARK_PORT = 6309  # mark:// without a port
_READS = ("FETCH", "LIST", "VERSIONS")  # verbs safe to send again
# The most a server may send back: twice the largest document a Mark server
# accepts (10 MiB), with room for metadata.  Anything larger is given up
# on while it arrives, never held whole.
MAX_RESPONSE_BYTES = 24 * 1024 * 1024
CACHED_VERSIONS = 64  # versions a client keeps, the least recently used going first
REFUSED_TRIES = 8  # sends of a request, in all, while the server refuses it or closes unanswered
_LOOK_AHEAD = 16  # versions after expected-version searched for a write whose outcome is unknown


class MarkResponse(NamedTuple):
    """A Mark answer: its status, its metadata (strings) and its body."""

    status: str
    metadata: Dict[str, str]
    body: str

    def number(self, key: str) -> int:
        """The version number under `key` ("version", "server-version", ...); MarkError if there is none."""
        value = self.metadata.get(key, "")
        if not _is_version(value):
            raise MarkError("transport", f"Mark response {self.status!r} has no version number {key!r} "
                                         "(ASCII digits, at most 18)", self.metadata)
        return int(value)


class MarkError(Exception):
    """What went wrong, as a script branches on it; the module docstring lists where each is raised.

    `status`: a Mark error status the server answered ("not-found", ...: made by `from_response`,
    for mark_publish and mark_sections; this client returns these instead), "transport" (no
    usable answer, or one the request rules out), "refused" (the server kept refusing the request
    unhandled: try again later) or "overwritten" (mark_publish: another writer's version it could
    not put back, `metadata["lost-version"]`).  `may_have_landed`: a copy of a write went out and
    whether it was stored is unknown (for "overwritten": it was), whatever the status: fetch
    before retrying.
    """

    def __init__(self, status: str, message: str, metadata: Optional[Dict[str, str]] = None,
                 may_have_landed: bool = False):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.metadata = dict(metadata or {})
        self.may_have_landed = may_have_landed

    @classmethod
    def from_response(cls, response: MarkResponse, doing: str) -> "MarkError":
        message = " ".join(line.lstrip("# ") for line in response.body.split("\n") if line.strip())
        return cls(response.status, f"{doing}: {message or response.status}", response.metadata)


# --------------------------------------------------------------- the client

class MarkClient:
    """A Mark server: over QUIC for mark://host[:port], over HTTP for http(s)://.

    One connection (QUIC) or keep-alive session (HTTP) for every request;
    `timeout` seconds is each request's deadline (the module docstring says
    what it covers).  `verify` is True (check the server's certificate
    against the system's CAs), False (don't: a development server's
    self-signed certificate) or the path of a PEM file of CAs.  Methods
    return every Mark status (conflict, not-found, ...) as a `MarkResponse`
    and raise `MarkError` where the module docstring lists.  One
    client per thread.

    A `session` of your own is used as it is (hooks, certificates, its
    proxies, verify and trust_env), except that this client mounts its
    adapter for base_url's URLs on it, so that `timeout` stays a deadline:
    requests to other hosts through that session are untouched, and
    `close()` closes that adapter's connections, not the session.  `proxies`
    go with this client's requests only, over the session's own; a session
    this client makes takes none from the environment.  With a token and an
    http:// base_url, a proxy any of these would send a request through
    raises ValueError here, unless `allow_insecure_http=True`.  A `token`
    that is not a str, or is blank, raises TypeError.
    """

    def __init__(
        self,
        base_url: str,
        token: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT,
        session: Optional[requests.Session] = None,
        allow_insecure_http: bool = False,
        proxies: Optional[Dict[str, str]] = None,
        verify: Union[bool, str] = True,
    ):
        parts = _check_url(base_url, session is not None or bool(proxies))
        _check_settings(token, timeout, proxies, verify)
        if token and parts.scheme == "http" and not allow_insecure_http:
            _check_plain_http(base_url, proxies, session)
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self._token = token
        self._versions: "OrderedDict[tuple, MarkResponse]" = OrderedDict()
        self._link = _quic_link(parts.hostname, parts.port or MARK_PORT, verify) if parts.scheme == "mark" else None
        self._own_session = session is None
        if session is None:
            session = requests.Session()
            # Proxies come from the caller, never from HTTP_PROXY and the like: a plain
            # http:// proxy would see the token, which travels in the body.  (A session
            # passed in keeps its trust_env: _check_plain_http checked what it would take.)
            session.trust_env = False
            session.verify = verify
        # The deadline holds on a session passed in too, for this server's URLs only.
        self._adapter = _DeadlineAdapter()
        session.mount(self.base_url + "/", self._adapter)
        self._session = session
        self._proxies = dict(proxies or {})

    def __repr__(self) -> str:
        return f"MarkClient({self.base_url!r}, token={'<set>' if self._token else None})"

    def __enter__(self) -> "MarkClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close this client's connections: its own session, or on a session passed in
        the adapter it mounted (which stays mounted); the session itself stays open."""
        (self._session if self._own_session else self._adapter).close()
        if self._link:
            self._link.close()

    def fetch(self, path: str, version: Optional[int] = None) -> MarkResponse:
        """FETCH the current document, or `version` of it: cached, as the module docstring's kinds
        of answer say (a version never changes; an empty body may be a torn read, never kept: `_keep`).

        `path` is read as given: a "#" in it is part of the name (mark_sections's
        `fetch_section` reads one section).

        The current document's body is checked against the version its
        number names, read by number: a second Mark request, unless the
        cache answers it (each Mark request may be sent more than once, as
        the table says).  A current document without a version number,
        or with version 0 (no version yet), is returned as it came.  The
        real server reads the body through a link that can lag its newest
        version, and an edit of that older body published as the newer
        number would undo the newer one.  Where the bodies differ, the answer
        is `ok` with the numbered version's body, and the first answer's
        metadata but for `etag` (it named the other body, and is dropped) and
        `content-hash` (the numbered body's); nothing of the second answer's
        metadata is kept.  Either request can raise MarkError; a second
        answer that is not `ok` leaves the first as it came; an empty one,
        where the first has a body, raises MarkError("transport"): the
        version may still be being written (the module docstring's cache).
        """
        if version is None:
            return self._current(path)
        check_path(path)
        check_int("version", version, minimum=1)
        key = (path, version)
        if key in self._versions:
            self._versions.move_to_end(key)
            return self._versions[key]
        response = self.request("FETCH", f"{path}/v{version}")
        if response.status == "ok":
            self._keep(key, response._replace(metadata={k: v for k, v in response.metadata.items()
                                                        if k != "current-version"}))
        return response

    def publish(self, path: str, body: str, expected_version: Optional[int] = None,
                metadata: Optional[Dict[str, str]] = None) -> MarkResponse:
        """PUBLISH `body`; `expected_version` guards against overwriting newer writes.

        With `expected_version`, an unknown outcome is looked up (the module
        docstring's table), and an `ok` or `created` answer the server gave
        (not a look-up's made-up one) is kept, if `body` is not empty: the
        cached own PUBLISH.
        """
        if expected_version is not None:
            check_int("expected_version", expected_version, minimum=0)
        response = self._send("PUBLISH", path, metadata, body, expected_version)
        if expected_version is not None and response.status in ("ok", "created") and "looked-up" not in response.metadata:
            # That version is this body: the next edit of it needs no FETCH.
            version = response.metadata["version"]  # E or E + 1: _send checked it
            self._keep((path, int(version)), MarkResponse("ok", {**(metadata or {}), "version": version}, body))
        return response

    def append(self, path: str, text: str, expected_version: int,
               metadata: Optional[Dict[str, str]] = None) -> MarkResponse:
        """APPEND `text` after the current version, which must be `expected_version`; an unknown
        outcome is looked up as a publish's is (a version that is the one before it with `text` appended)."""
        check_str("text", text)
        check_int("expected_version", expected_version, minimum=1)
        return self._send("APPEND", path, metadata, text, expected_version)

    def versions(self, path: str) -> MarkResponse:
        """VERSIONS: `total`, `current` and `chain-valid` of a document."""
        return self.request("VERSIONS", path)

    def request(self, verb: str, path: str, metadata: Optional[Dict[str, str]] = None,
                body: str = "") -> MarkResponse:
        """Send any Mark request; the token is added as `auth` metadata.

        A verb other than FETCH, LIST and VERSIONS is a write without
        expected_version in the module docstring's table: it is never looked
        up, and sent again only after a refusal.
        """
        return self._send(verb, path, metadata, body, None)

    def _current(self, path: str) -> MarkResponse:
        """`fetch(path)`: the current document, its body checked against its version's, as `fetch` says."""
        latest = self.request("FETCH", path)
        number = latest.metadata.get("version", "")
        if latest.status != "ok" or "current-version" in latest.metadata or not _is_version(number) \
                or not int(number):
            return latest  # not a current document (an error, a version path such as /a.md/v3), or version 0
        pinned = self.fetch(path, version=int(number))
        if pinned.status != "ok" or pinned.body == latest.body:
            return latest
        if not pinned.body:  # a version still being written, or an empty one behind a lagging link
            raise MarkError("transport", f"FETCH {path}/v{number} answered an empty body while {path} has "
                                         "one: the version may still be being written; fetch again")
        metadata = {key: value for key, value in latest.metadata.items() if key != "etag"}
        metadata["content-hash"] = "sha256-" + hashlib.sha256(pinned.body.encode("utf-8")).hexdigest()
        return MarkResponse("ok", metadata, pinned.body)

    # ---- what a request comes to: the module docstring's table

    def _send(self, verb: str, path: str, metadata: Optional[Dict[str, str]], body: str,
              expected_version: Optional[int]) -> MarkResponse:
        """Send a request until the table's action ends it: a read, a write with
        `expected_version` (given only by publish and append), or a write without.

        Each exchange comes back as its row of the table (`_row`); `_ACTIONS` gives
        the cell's action, done here and in `_look`.  `went_out`: a copy of this
        write may have reached the server, so whatever ends the call says so;
        `notes`: what each look-up found, for the error that ends it.
        """
        column = "read" if verb in _READS else "write without E" if expected_version is None else "write with E"
        payload, url = self._message(verb, path, metadata, body, expected_version)
        doing, deadline = f"{verb} {url}", time.monotonic() + self.timeout
        tries, went_out, notes = 0, False, ""
        while True:
            tries += 1
            got = _row(self._exchange(verb, url, payload, doing, deadline), expected_version, doing)
            earlier = went_out  # a copy went out before this send
            went_out = went_out or (column != "read" and got.kind not in ("unsent", "refused"))
            looked = self._look(_ACTIONS[got.kind, column], earlier, verb, path, body, expected_version, metadata)
            if looked.found is not None:
                return looked.found
            notes += looked.note if looked.note not in notes else ""  # each finding once
            then = looked.then
            if then == "answer":
                return got.response
            pause = got.retry_after if got.retry_after is not None else _backoff(tries)
            again = then == "again" and tries < REFUSED_TRIES
            if again and time.monotonic() + pause < deadline:
                time.sleep(pause)
                continue
            stop = f" (no time left for another within {self.timeout:g} s)" if again else ""
            raise _given_up(got, doing, tries, stop + notes, path, landed=then == "landed?" or went_out,
                            earlier=earlier)

    def _look(self, action: _Action, resent: bool, verb: str, path: str, body: str,
              expected_version: Optional[int], metadata: Optional[Dict[str, str]]
              ) -> "_Looked":
        """A cell's `action` up to its look-up, and what remains of it (`_Looked`).  `resent`: an
        earlier copy of the write went out."""
        if not (action.look == "look" or (action.look == "look if resent" and resent)):
            return _Looked(None, action.then, "")
        try:
            return _Looked(self._look_up(verb, path, body, expected_version, metadata), action.then,
                           "; a look-up did not find the write")
        except MarkError as error:
            return _Looked(None, _CANNOT_TELL.get(action.then, action.then),
                           f"; a look-up could not tell whether it landed ({error.message})")

    def _look_up(self, verb: str, path: str, body: str, expected_version: int,
                 metadata: Optional[Dict[str, str]]) -> Optional[MarkResponse]:
        """Where a write at `expected_version` whose outcome is unknown was stored, answered as the
        server would have (the module docstring's "look"); None when no version after it, up to the
        current one and at most _LOOK_AHEAD, holds it; MarkError when its own requests fail, so
        that it cannot tell.  Sends VERSIONS, then `_holds_write`'s FETCHes, version by version,
        until one holds it, and nothing more (`modified` is the read's)."""
        versions = self.versions(path)
        if versions.status != "ok":
            raise MarkError("transport", f"VERSIONS {path} answered {versions.status}")
        last = min(versions.number("current"), expected_version + _LOOK_AHEAD)
        for version in range(expected_version + 1, last + 1):
            held = self._holds_write(verb, path, version, body, metadata)
            if held is None:
                continue
            if version == expected_version + 1:
                return MarkResponse("created", {"version": str(version), "modified": held.metadata.get("modified", ""),
                                                "looked-up": "true"}, "")
            return MarkResponse("conflict", {"server-version": str(version), "looked-up": "true",
                                             "your-version": str(expected_version)}, "")
        return None

    def _holds_write(self, verb: str, path: str, version: int, body: str,
                     metadata: Optional[Dict[str, str]]) -> Optional[MarkResponse]:
        """`version` as read, if it is what the write makes (else None): every key of `metadata` is in it with the value
        sent (a key it lacks is no match), and its body is `body` (PUBLISH) or, for APPEND, version
        - 1's body with `body` appended.  FETCHes the version, and for APPEND the one before
        (each by number, so only when not cached); MarkError, so that it cannot tell, as the
        module docstring's "look" lists: the version answered neither `ok` nor `not-found`, or
        `ok` and empty for a write that is not; the one before answered other than `ok`."""
        held = self.fetch(path, version=version)
        if held.status not in ("ok", "not-found") or (held.status == "ok" and not held.body and body):
            raise MarkError("transport", f"FETCH {path}/v{version} answered {held.status}"
                                         f"{' and no body' if held.status == 'ok' else ''}")
        if held.status != "ok" or any(held.metadata.get(key) != value for key, value in (metadata or {}).items()):
            return None
        before = self.fetch(path, version=version - 1) if verb == "APPEND" else held
        if before.status != "ok":
            raise MarkError("transport", f"FETCH {path}/v{version - 1} answered {before.status}")
        return held if held.body == (body if verb == "PUBLISH" else _appended(before.body, body)) else None

    def _message(self, verb: str, path: str, metadata: Optional[Dict[str, str]], body: str,
                 expected_version: Optional[int]) -> Tuple[bytes, str]:
        """The request as this client's wire carries it, and the URL it goes to."""
        if not isinstance(verb, str) or not (verb.isascii() and verb.isalpha() and verb.isupper()):
            raise ValueError(f"verb must be a word of upper-case ASCII letters, such as FETCH, not {verb!r}")
        check_path(path)
        check_str("body", body)
        metadata = _checked_metadata(metadata)
        if expected_version is not None:
            metadata["expected-version"] = str(expected_version)
        if self._token:
            metadata["auth"] = self._token
        if self._link:
            # As the real client writes it: a metadata block only when there is
            # metadata, or when the body would otherwise be read as one.
            block = write_frontmatter(metadata) if metadata or body.startswith("---") else ""
            return f"{verb} {path}\n{block}{body}".encode("utf-8"), self.base_url + path
        block = write_frontmatter(metadata) if (metadata or body) else ""  # the binding's rule
        return (block + body).encode("utf-8"), self.base_url + quote(path, safe="/")

    def _exchange(self, verb: str, url: str, payload: bytes, doing: str, deadline: float) -> "_Exchange":
        """Send `payload` once and read its answer, by `deadline`: what came of it, as a value.

        Over HTTP, urllib3.Timeout(total=the time left) bounds the connect and
        makes the read timeout what is left after connecting and sending; the
        session's `_DeadlineAdapter` makes that a budget for every read.
        """
        if self._link:
            try:
                data = self._link.exchange(payload, doing, deadline - time.monotonic(),
                                           retry=verb in _READS, limit=MAX_RESPONSE_BYTES)
            except MarkError as error:  # mark_quic's failures: whether the request went out, and why
                return _Exchange("lost" if error.may_have_landed else "unsent", why=error.message)
            if not data:  # the stream ended without a byte: refused unread (the real server's rate limit)
                return _Exchange("refused")
            return _parse_answer(data, True, doing)
        try:
            http = self._session.request(
                verb, url, data=payload, timeout=Timeout(total=max(0.001, deadline - time.monotonic())),
                allow_redirects=False, stream=True, proxies=self._proxies,
                headers={"Content-Type": "text/markdown; charset=utf-8", "Accept-Encoding": "identity"},
            )
        except requests.RequestException as error:
            return _failed_exchange(error, doing)
        with http:
            return _read_answer(http, doing)

    def _keep(self, key: Tuple[str, int], response: MarkResponse) -> None:
        """Remember version key[1] of document key[0], the least recently used going first,
        unless its body is empty (maybe a torn read: the module docstring's cache), the one rule
        for every version kept, an own PUBLISH's too."""
        if not response.body:
            return
        self._versions[key] = response
        self._versions.move_to_end(key)  # stored again: used now
        if len(self._versions) > CACHED_VERSIONS:
            self._versions.popitem(last=False)


# ---------------------------------------------------------- the table, and reading answers

class _Action(NamedTuple):
    """A cell of the module docstring's table: `look` ("look", "look if resent", or "": none), then
    `then` when no look-up found the write: "answer", "again", "error" or "landed?"."""

    look: str
    then: str


# The module docstring's table, one line per cell: (row, column) -> the action `_send` takes.  Each
# cell's tests: test_failures.py's test_each_cell_of_the_table[ROW/FAILURE-COLUMN-stored] (or
# -not stored), one per failure the row holds; that file also checks this is the docstring's table.
_ACTIONS = {
    ("unsent", "read"): _Action("", "error"),
    ("unsent", "write with E"): _Action("", "error"),
    ("unsent", "write without E"): _Action("", "error"),
    ("refused", "read"): _Action("", "again"),
    ("refused", "write with E"): _Action("", "again"),
    ("refused", "write without E"): _Action("", "again"),
    ("closed", "read"): _Action("", "again"),
    ("closed", "write with E"): _Action("look", "again"),
    ("closed", "write without E"): _Action("", "landed?"),
    ("lost", "read"): _Action("", "error"),
    ("lost", "write with E"): _Action("look", "landed?"),
    ("lost", "write without E"): _Action("", "landed?"),
    ("server-error", "read"): _Action("", "answer"),
    ("server-error", "write with E"): _Action("look", "answer"),
    ("server-error", "write without E"): _Action("", "answer"),
    ("conflict", "read"): _Action("", "answer"),
    ("conflict", "write with E"): _Action("look if resent", "answer"),
    ("conflict", "write without E"): _Action("", "answer"),
    ("wrong version", "write with E"): _Action("", "landed?"),
    ("answer", "read"): _Action("", "answer"),
    ("answer", "write with E"): _Action("", "answer"),
    ("answer", "write without E"): _Action("", "answer"),
}

class _Looked(NamedTuple):
    """What `_look` made of a cell: `found`, the write's made-up answer if a look-up found it
    (returned as it is); else `then`, the cell's action left to do ("answer", "again", "error"
    or "landed?", after `_CANNOT_TELL`); `note`, what the look-up adds to an error's message."""

    found: Optional[MarkResponse]
    then: str
    note: str


# A look-up that cannot tell (its own requests fail) turns "answer" into "landed?": the answer as it
# came would hide a write that may have landed.  Every other action stands.
_CANNOT_TELL = {"answer": "landed?"}


class _Exchange(NamedTuple):
    """What one exchange came to, as `kind` a row of the module docstring's table: `_exchange`
    makes "answer" (`response`: any Mark answer), "refused" (`retry_after`: the seconds the
    server asked for), "closed", "unsent" or "lost" (every failure the table's lost row
    lists); `_row` then sorts an answer into "server-error", "conflict", "wrong version" or
    "answer".  `why` says it for an error."""

    kind: str
    response: Optional[MarkResponse] = None
    why: str = ""
    retry_after: Optional[float] = None


def _row(got: _Exchange, expected_version: Optional[int], doing: str) -> _Exchange:
    """`got` as its row of the table: an answer's is "server-error", "conflict", "wrong
    version" (with E: `created` as a version but E + 1, or `ok` as neither E nor E + 1)
    or "answer"; any other exchange's is its kind."""
    if got.kind != "answer":
        return got
    status, number = got.response.status, got.response.metadata.get("version", "")
    if status in ("server-error", "conflict"):
        return got._replace(kind=status)
    if expected_version is None or status not in ("ok", "created"):
        return got
    landed = (expected_version + 1,) if status == "created" else (expected_version, expected_version + 1)
    if _is_version(number) and int(number) in landed:
        return got
    return got._replace(kind="wrong version", why=f"{doing}: the server answered {status} as version "
                                                  f"{number or '(none)'} to a write at expected-version {expected_version}")


def _given_up(got: _Exchange, doing: str, tries: int, more: str, path: str, landed: bool,
              earlier: bool) -> MarkError:
    """The MarkError that ends a request after `tries` sends, the last of which came to `got`;
    `more`: why no send more, what a look-up found.  `landed`: the table's "landed?", or a
    copy of the write went out (`earlier`: before the last)."""
    sends = f"{tries} send{'s' if tries > 1 else ''} in all"
    if got.kind == "refused":
        why = f"{doing}: the server refused the last send without handling it (over its rate limit?), {sends}{more}"
    elif got.kind == "closed":
        why = f"{doing}: the connection closed without an answer to the last send, {sends}{more}"
    else:
        why = (got.why or f"{doing}: the server answered {got.response.status}") + more
    if landed:
        why += (f"; {'an earlier copy of ' if earlier else ''}the write went out and may have landed: "
                f"fetch {path} before retrying")
    elif got.kind == "refused":
        why += "; try again later"
    return MarkError("refused" if got.kind == "refused" else "transport", why,
                     got.response.metadata if got.response else None, may_have_landed=landed)


def _read_answer(http: requests.Response, doing: str) -> _Exchange:
    """An HTTP answer checked and read: its status line and headers, then its body,
    within MAX_RESPONSE_BYTES and the deadline (the socket's: see the deadline's section)."""
    if http.status_code in (429, 503):
        after = http.headers.get("Retry-After", "")
        return _Exchange("refused", retry_after=float(after) if _is_digits(after) and len(after) < 6 else None)
    if http.status_code != 200:
        return _Exchange("lost", why=f"HTTP {http.status_code} from {doing}: not a Mark server? "
                                     "(redirects are not followed)")
    if http.headers.get("Content-Encoding", "identity").lower() != "identity":
        return _Exchange("lost", why=f"{doing}: the answer came compressed; Mark answers are not")
    announced = http.headers.get("Content-Length")
    if announced is not None and not _is_digits(announced):
        return _Exchange("lost", why=f"{doing}: bad Content-Length {announced!r}")
    if announced is not None and int(announced) > MAX_RESPONSE_BYTES:
        return _Exchange("lost", why=f"{doing}: the answer is larger than {MAX_RESPONSE_BYTES} bytes")
    return _read_body(http, doing, announced)


# One wording for a body that ended early, whichever urllib3 noticed it (1.26 returns it short,
# 2.x raises ProtocolError, and may drop the bytes of the read that failed).
_CUT_OFF = "the answer was cut off (reset, or shorter than its Content-Length)"


def _read_body(http: requests.Response, doing: str, announced: Optional[str]) -> _Exchange:
    """The body of an answer whose headers passed, as long as `announced` (Content-Length) says."""
    chunks, size = [], 0
    try:
        while chunk := http.raw.read(65536, decode_content=False):
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                return _Exchange("lost", why=f"{doing}: the answer is larger than {MAX_RESPONSE_BYTES} bytes")
            chunks.append(chunk)
    except urllib3_exceptions.ReadTimeoutError:  # _DeadlineSocket's socket.timeout, as urllib3 raises it
        return _Exchange("lost", why=f"{doing}: no whole answer within the timeout")
    except (OSError, urllib3_exceptions.HTTPError):  # a reset; 2.x: a short body, as ProtocolError
        return _Exchange("lost", why=f"{doing}: {_CUT_OFF}")
    if announced is not None and size != int(announced):  # a short body, as urllib3 1.26 gives it
        return _Exchange("lost", why=f"{doing}: {_CUT_OFF}")
    chunked = "chunked" in http.headers.get("Transfer-Encoding", "").lower()
    return _parse_answer(b"".join(chunks), announced is not None or chunked, doing)


def _parse_answer(data: bytes, whole: bool, doing: str) -> _Exchange:
    """The Mark response in the bytes of an answer; `whole`: they came with their length."""
    try:
        metadata, body = read_frontmatter(data.decode("utf-8"))
        status = metadata.pop("status")
    except (UnicodeDecodeError, ValueError, KeyError):
        return _Exchange("lost", why=f"{doing}: the answer is not a Mark response")
    digest = metadata.get("content-hash")
    if digest is None and not whole:
        return _Exchange("lost", why=f"{doing}: the answer had no length and no content-hash, "
                                     "so whether it came whole is unknown")
    if digest is not None and digest != "sha256-" + hashlib.sha256(body.encode("utf-8")).hexdigest():
        return _Exchange("lost", why=f"{doing}: the body does not match its content-hash")
    return _Exchange("answer", MarkResponse(status, metadata, body))


def _failed_exchange(error: requests.RequestException, doing: str) -> _Exchange:
    """The table's row for a request that raised `error` before its answer's headers were whole.

    requests raises ConnectionError, ConnectTimeout, ReadTimeout, SSLError or ProxyError, most
    wrapping urllib3's MaxRetryError, whose `reason` wraps what failed, and a connection closed
    before any answer wrapping urllib3's ProtocolError, whose args hold http.client's error
    (urllib3 1.26 and 2.x alike); the cases below look through either wrapping (`_causes`),
    first match wins.  _read_answer sorts out
    what fails once the headers are in (a body cut off, too long, too slow, ...).
    """
    causes = _causes(error)
    # Raised while connecting (TCP, a proxy's CONNECT tunnel, the TLS handshake: all in
    # HTTPConnection.connect, which _DeadlineConnect marks) or a connect timeout: nothing was sent.
    if isinstance(error, requests.ConnectTimeout) or any(getattr(cause, "mark_connecting", False) for cause in causes):
        return _Exchange("unsent", why=f"{doing} failed: {type(error).__name__}")
    # Closed (http.client's RemoteDisconnected: not a byte of status line) or reset before the
    # headers were whole: the server declined the request unread, broke (before or after
    # handling it), or was closing a kept-alive connection just as the request went out.
    if any(isinstance(cause, (RemoteDisconnected, ConnectionResetError)) for cause in causes):
        return _Exchange("closed", why=f"{doing}: the connection closed without an answer")
    # No status line and headers by the deadline (_DeadlineSocket's socket.timeout).
    if isinstance(error, requests.ReadTimeout):
        return _Exchange("lost", why=f"{doing}: no whole answer within the timeout")
    # Anything else once connected (a broken pipe while sending, a TLS error mid-answer, bad
    # headers): the request may have reached the server.
    return _Exchange("lost", why=f"{doing} failed: {type(error).__name__}")


def _causes(error: BaseException) -> list:
    """`error` and every exception it wraps in its args or as urllib3's `reason`."""
    found, todo = [], [error]
    while todo:
        cause = todo.pop()
        if isinstance(cause, BaseException) and all(cause is not seen for seen in found):
            found.append(cause)
            todo += [*cause.args, getattr(cause, "reason", None)]
    return found


def _backoff(tries: int) -> float:
    """The pause before sending a request again: 0.1 s, doubling up to 2 s, times a random 0.5 to 1.5
    (so writers refused together do not come back together): at most 3 s."""
    return min(2.0, 0.1 * 2 ** (tries - 1)) * random.uniform(0.5, 1.5)


def _quic_link(host: str, port: int, verify: Union[bool, str]):
    """The QUIC connection of a mark:// client: mark_quic.py, which needs aioquic."""
    try:
        from mark_quic import QuicLink
    except ImportError:
        raise ImportError("mark:// URLs need aioquic and mark_quic.py beside mark_client.py: "
                          "pip install 'mark-publish[quic]'") from None
    return QuicLink(host, port, verify)


# ---- frontmatter codec: this block is the same, byte for byte, in mark_client.py
# ---- and mark_server.py (each file stays standalone); test_codec.py checks it.

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+/=~-]*\Z")  # no YAML indicator, space or colon
# What YAML reads as a number, a bool (YAML 1.1's too), null or a date, not a string.
_NOT_A_STRING = re.compile(
    r"(?:[-+]?(?:0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)"
    r"|[yYnN]|[Yy]es|YES|[Nn]o|NO|[Tt]rue|TRUE|[Ff]alse|FALSE|[Oo]n|ON|[Oo]ff|OFF|[Nn]ull|NULL"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt].*)?)\Z")
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
    "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def write_frontmatter(metadata: Dict[str, str]) -> str:
    """A Mark frontmatter block, keys sorted, values written as Go's yaml.v3 writes them."""
    lines = []
    for key in sorted(metadata):
        value = metadata[key]
        if not isinstance(key, str) or not _PLAIN_KEY.match(key):
            raise ValueError(f"metadata key {key!r} must be letters, digits, '_', '-' or '.'")
        if not isinstance(value, str):
            raise TypeError(f"metadata value for {key!r} must be str, not {type(value).__name__}")
        lines.append(f"{key}: {write_scalar(value)}\n")
    return "---\n" + ("".join(lines) or "\n") + "---\n"


def write_scalar(value: str) -> str:
    """`value` as a YAML scalar that Go's yaml.v3 reads back exactly, in yaml.v3's style.

    Plain where nothing in it could mean anything but a string (a token,
    a hex etag, "ok"); otherwise double-quoted: "3", "2026-12-03T10:41:15Z",
    "true", "a: b".  So a request reads byte for byte as the real client's.
    """
    if _PLAIN_VALUE.match(value) and not _NOT_A_STRING.match(value):
        return value
    out = []
    for char in value:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append(f"\\x{code:02x}")
        elif char in "\ufeff\ufffe\uffff" or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        elif code > 0xFFFF:
            out.append(f"\\U{code:08x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def read_frontmatter(text: str):
    """Split a Mark message into (metadata, body); ValueError when malformed.

    The block starts with "---\\n" at byte 0 and ends at the first
    "\\n---\\n"; the body after it is returned byte for byte.
    """
    if not text.startswith("---\n"):
        raise ValueError("no frontmatter")
    end = text.find("\n---\n", 3)
    if end < 0:
        raise ValueError("frontmatter is not closed")
    metadata = {}
    for line in text[4:end].split("\n"):
        if not line.strip():
            continue
        if line[0] in " \t":
            raise ValueError(f"nested or indented YAML is not Mark frontmatter: {line!r}")
        key, rest = _read_scalar(line, key=True)
        if not rest.startswith(":") or rest[1:2] not in ("", " "):
            raise ValueError(f"not a 'key: value' line: {line!r}")
        value, rest = _read_scalar(rest[1:].strip(" "), key=False)
        if rest.strip(" ") and not rest.strip(" ").startswith("#"):
            raise ValueError(f"trailing text after value: {line!r}")
        metadata[key] = value
    return metadata, text[end + 5:]


def _read_scalar(text: str, key: bool):
    """Read a plain, single- or double-quoted scalar; return (value, the rest)."""
    if text.startswith("'"):
        match = re.match(r"'((?:[^']|'')*)'", text)
        if not match:
            raise ValueError(f"unterminated single-quoted scalar: {text!r}")
        return match.group(1).replace("''", "'"), text[match.end():]
    if text.startswith('"'):
        return _read_double_quoted(text)
    if key:
        end = text.find(":")
        value, rest = (text, "") if end < 0 else (text[:end], text[end:])
    else:
        comment = text.find(" #")
        value, rest = (text, "") if comment < 0 else (text[:comment], text[comment:])
    value = value.strip(" ")
    if (key and not value) or value[:1] in ("|", ">", "[", "{", "&", "*", "!", "%", "@", "`"):
        raise ValueError(f"unsupported YAML scalar: {text!r}")
    return value, rest


def _read_double_quoted(text: str):
    out, i = [], 1
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(out), text[i + 1:]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        escape = text[i + 1:i + 2]
        if escape in _UNESCAPES:
            out.append(_UNESCAPES[escape])
            i += 2
        elif escape in _HEX_ESCAPES:
            digits = text[i + 2:i + 2 + _HEX_ESCAPES[escape]]
            if len(digits) != _HEX_ESCAPES[escape] or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ValueError(f"bad \\{escape} escape in {text!r}")
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
                raise ValueError(f"\\{escape}{digits} is not a character")
            out.append(chr(code))
            i += 2 + len(digits)
        else:
            raise ValueError(f"unknown escape \\{escape} in {text!r}")
    raise ValueError(f"unterminated double-quoted scalar: {text!r}")


# ---- end of frontmatter codec


# ---------------------------------------------------------------- helpers

def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, not {value}")


def check_path(path) -> None:
    if not isinstance(path, str):
        raise TypeError(f"path must be str, not {type(path).__name__}")
    if not path.startswith("/"):
        raise ValueError(f"path must start with '/': {path!r}")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in path):
        raise ValueError(f"path must not contain NUL or control characters: {path!r}")


def _check_url(base_url, http_only: bool):
    """`base_url`, split; `http_only`: a session or proxies came with it."""
    if not isinstance(base_url, str):
        raise TypeError(f"base_url must be str, not {type(base_url).__name__}")
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https", "mark") or not parts.hostname:
        raise ValueError(f"base_url must be a mark://, http:// or https:// URL with a host, not {base_url!r}")
    if parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError("base_url must not carry a query, fragment or credentials")
    if parts.scheme == "mark" and parts.path.strip("/"):
        raise ValueError(f"a mark:// base_url is a host and port, without a path: {base_url!r}")
    if parts.scheme == "mark" and http_only:
        raise ValueError("session and proxies are for http(s):// URLs; mark:// speaks QUIC")
    return parts


def _check_settings(token, timeout, proxies, verify) -> None:
    if token is not None and (not isinstance(token, str) or not token.strip()):
        raise TypeError("token must be a non-empty str or None")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout!r}")
    _check_proxies(proxies)
    if not isinstance(verify, (bool, str)) or (isinstance(verify, str) and not os.path.isfile(verify)):
        raise ValueError(f"verify must be True, False or the path of a PEM file of CAs, not {verify!r}")


def _check_proxies(proxies) -> None:
    """Proxies as requests takes them, through an http:// or https:// proxy: a SOCKS one would bypass _DeadlineSocket."""
    if proxies is not None and not (isinstance(proxies, dict) and all(
            isinstance(url, str) and url.lower().startswith(("http://", "https://")) for url in proxies.values())):
        raise ValueError("proxies must map a scheme to an http:// or https:// proxy URL")


def _checked_metadata(metadata) -> Dict[str, str]:
    """A copy of the caller's `metadata`, checked: a mapping with str keys (write_frontmatter
    checks their form and the values), without the keys this client writes itself."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata must be a mapping of str to str, not {type(metadata).__name__}")
    for key in metadata:
        if not isinstance(key, str):
            raise TypeError(f"metadata keys must be str, not {type(key).__name__} ({key!r})")
        if key in ("auth", "expected-version"):
            raise ValueError(f"metadata must not hold {key!r}: this client writes it (token=, expected_version=)")
    return dict(metadata)


def _check_plain_http(url: str, proxies: Optional[Dict[str, str]], session: Optional[requests.Session]) -> None:
    """A token goes over plain http:// to a loopback host only, and through no proxy: neither
    `proxies`, nor a session's own, nor one it would take from the environment (requests' own
    merge and choice).  ValueError otherwise, naming the proxy without its credentials."""
    if not _is_loopback(urlsplit(url).hostname):
        raise ValueError("the token is not sent over plain http:// to a non-loopback host; "
                         "use https://, or pass allow_insecure_http=True if the network is trusted")
    if session is not None:
        proxies = session.merge_environment_settings(url, dict(proxies or {}), None, None, None)["proxies"]
    proxy = select_proxy(url, proxies)
    if proxy:
        where = urlsplit(proxy)
        raise ValueError(f"the token is not sent over plain http:// through a proxy ({where.scheme}://"
                         f"{where.netloc.rpartition('@')[2]}: given, the session's or the environment's); "
                         "use https://, or pass allow_insecure_http=True if the network is trusted")


def check_str(name: str, value) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be str, not {type(value).__name__}")


def _is_version(text: str) -> bool:
    """A version number: ASCII digits, at most 18 of them (a sane integer, as the server's own)."""
    return _is_digits(text) and len(text) <= 18


def _is_digits(text: str) -> bool:
    """ASCII digits only: no sign, space, underscore or other script's digits."""
    return bool(text) and text.isascii() and text.isdigit()


def _appended(old: str, text: str) -> str:
    """What APPEND makes of `old`: a newline only where it lacks one, then `text`."""
    return old + ("" if old.endswith("\n") else "\n") + text


# ============================================================== the deadline
# Everything below keeps `timeout` a deadline for every read of an HTTP answer,
# without a thread.  It is the one part of this file that leans on names that
# are not public API; checked with urllib3 1.26.20 and 2.8.0 (CPython 3.11) and
# 2.6.3 (CPython 3.9); CI runs the client's tests under urllib3 1.26 and 2.x:
#   - urllib3: PoolManager.pool_classes_by_scheme (which pool class serves a
#     scheme), HTTPConnectionPool.ConnectionCls (which connection class a pool
#     makes), HTTPConnection.connect() setting HTTPConnection.sock, and urllib3
#     calling sock.settimeout(read timeout) just before it reads an answer
#     (1.26: HTTPConnectionPool._make_request; 2.x: HTTPConnection.getresponse);
#   - http.client reading the answer through sock.makefile("rb"), a
#     socket.SocketIO whose private _sock it calls recv_into on.
# And _DeadlineConnect marks what HTTPConnection.connect() raised, which requests and
# urllib3 keep in their exceptions' args or `reason` (`_causes` finds it).
# test_hostile.py's trickling servers fail if any of these stops holding.

class _DeadlineSocket:
    """A connected socket whose recv_into calls together wait no longer than the timeout last set.

    A socket timeout bounds each recv alone, so a server sending a byte now
    and then could hold an answer forever; here every recv_into waits only
    for what is left, and then raises socket.timeout.  recv_into is the only
    read bounded so, and the only one an answer is read through: http.client
    reads the file `makefile` gives, whose reads it points here.  All else
    (recv and sending included) is the socket's.
    """

    def __init__(self, sock):
        self._sock = sock
        self._timeout: Optional[float] = sock.gettimeout()
        self._until: Optional[float] = None

    def __getattr__(self, name: str):
        return getattr(self._sock, name)

    def settimeout(self, timeout: Optional[float]) -> None:
        self._timeout = timeout
        self._until = None if timeout is None else time.monotonic() + timeout
        self._sock.settimeout(timeout)

    def recv_into(self, buffer, nbytes: int = 0, flags: int = 0) -> int:
        if self._until is None:
            return self._sock.recv_into(buffer, nbytes, flags)
        left = self._until - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out")
        self._sock.settimeout(left)
        try:
            return self._sock.recv_into(buffer, nbytes, flags)
        finally:
            self._sock.settimeout(self._timeout)  # urllib3 1.26 sends a reused connection's next request with it

    def makefile(self, mode: str = "rb", buffering: Optional[int] = None):
        # http.client reads the answer through this file.  The socket makes it
        # (so closing the socket keeps it open, as http.client needs), and its
        # reads are pointed at recv_into above.
        file = self._sock.makefile(mode, buffering)
        file.raw._sock = self
        return file


class _DeadlineConnect:
    def connect(self) -> None:
        try:
            super().connect()  # TCP, a proxy's tunnel, TLS: _DeadlineSocket goes around what reads the answer
        except Exception as error:
            error.mark_connecting = True  # nothing of the request went out: _failed_exchange's "unsent"
            raise
        self.sock = _DeadlineSocket(self.sock)


class _DeadlineHTTPConnection(_DeadlineConnect, HTTPConnection):
    pass


class _DeadlineHTTPSConnection(_DeadlineConnect, HTTPSConnection):
    pass


class _DeadlineHTTPPool(HTTPConnectionPool):
    ConnectionCls = _DeadlineHTTPConnection


class _DeadlineHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _DeadlineHTTPSConnection


class _DeadlineAdapter(HTTPAdapter):
    """requests' adapter, whose connections (direct or through an http(s) proxy) read through a _DeadlineSocket."""

    _POOLS = {"http": _DeadlineHTTPPool, "https": _DeadlineHTTPSPool}

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = self._POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs):
        if not proxy.lower().startswith(("http://", "https://")):  # a SOCKS proxy's pools would not read through _DeadlineSocket
            raise ValueError(f"only http:// and https:// proxies are supported, not {urlsplit(proxy).scheme}://")
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = self._POOLS
        return manager
