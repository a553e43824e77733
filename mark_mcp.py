"""An MCP server for Mark documents: demarkus-mcp's document tools, with merging.

    $ MARK_TOKEN=... mark-mcp --host mark://docs.example.com      # stdio: what an agent's MCP client runs

Register it with an MCP client (Claude Desktop, an agent framework):

    {"mcpServers": {"mark": {"command": "mark-mcp",
                             "args": ["--host", "mark://docs.example.com"],
                             "env": {"MARK_TOKEN": "..."}}}}

It is a drop-in for the real `demarkus-mcp`'s document tools, with the same
names, parameters and answers: mark_fetch, mark_list, mark_versions and
mark_archive (url), mark_append (url, body, expected_version?) and
mark_publish (url, body, expected_version, on_conflict?, metadata?); and
mark_update_section (url, section, body, expected_version?), which writes
one section (mark_fetch of url#anchor reads one).  A
`url` is a bare path on the --host server (/notes.md) or a full mark://,
http:// or https:// URL.  Each answer is the text demarkus-mcp gives: the
status line, the server's metadata lines, an empty line and the server's
body; `structuredContent` carries the same fields.

What it adds is `on_conflict` on mark_publish, for a publish that lost a
race (another writer published after the version the agent edited):

* "fail" (the default): the server's conflict answer, as demarkus-mcp gives it.
* "merge": the three edits are merged (diff3.py) and a clean merge is
  published: `status: ok, merged: true`; overlapping edits come back as
  `status: conflict, mergeable: false` with the body marked up git-style.
* "candidate": merged the same way, published never: `status:
  merge-candidate` with the merged body, for the agent to read (and
  resolve, if `has-markers: true`) before it publishes at
  `publish-at-version`.

A publish that needed no merge answers as demarkus-mcp does in every mode.
Writes carry `agent: mcp` metadata, as demarkus-mcp's do.  The token (from
$MARK_TOKEN, or --token, which other users can read in the process list)
goes to the --host server only, and never into an answer or a log.
Needs the `mcp` extra: pip install 'mark-publish[mcp]' ('[mcp,quic]' for mark://).
"""

import argparse
import logging
import os
import sys
import threading
from dataclasses import asdict
from typing import Any, Dict, Optional, Tuple
from urllib.parse import urlsplit

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp.types import CallToolResult, TextContent
except ImportError:
    raise ImportError("the MCP server needs the mcp SDK: pip install 'mark-publish[mcp]'") from None

from mark_client import DEFAULT_TIMEOUT, MARK_PORT, MarkClient, MarkError, MarkResponse
from mark_publish import PublishResult, after_conflict
from mark_sections import fetch_section, update_section

__version__ = "0.3.0"  # the release this file is from; vendored copies keep saying it
__all__ = ["create_server", "main"]

URL = {"description": "bare path, e.g. /index.md or /docs/", "type": "string"}
# The mark_publish tool: demarkus-mcp's, with on_conflict and metadata.
MARK_PUBLISH_TOOL = {
    "name": "mark_publish",
    "description": (
        "Publish a markdown document to a Mark server, with the version you fetched as expected_version "
        "(0 creates a new document). If someone published in between: on_conflict='fail' answers "
        "status: conflict (fetch, redo your edit, publish again); 'merge' merges the edits and publishes "
        "a clean merge (status: ok, merged: true), or answers status: conflict, mergeable: false with "
        "git-style markers in the body where the edits overlap: resolve them and publish the result with "
        "current-version as expected_version; 'candidate' merges but publishes nothing: read the "
        "merge-candidate body, resolve any markers (has-markers: true), and publish it with "
        "publish-at-version as expected_version. reason: contention means others kept publishing: "
        "call again. repaired: N means the server had stored your write over version N, which was restored."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "body": {"description": "markdown content to publish", "type": "string"},
            "expected_version": {
                "description": "version number from a prior fetch for conflict detection; "
                               "use 0 when creating a new document",
                "type": "number",
            },
            "metadata": {
                "description": "metadata to store with the version, e.g. {\"title\": \"Plan\"}",
                "type": "object", "additionalProperties": {"type": "string"},
            },
            "on_conflict": {
                "description": "what to do when someone published after expected_version: "
                               "fail (default), merge, or candidate (merge, publish nothing)",
                "type": "string", "enum": ["fail", "merge", "candidate"], "default": "fail",
            },
            "url": {"description": "bare path, e.g. /index.md or /docs/", "type": "string"},
        },
        "required": ["url", "body", "expected_version"],
    },
}

READ_TOOLS = {
    "mark_fetch": ("FETCH", ("version", "modified", "etag", "content-hash"),
                   "Fetch a markdown document from a Mark server. Keep its version: publish your "
                   "edit with expected_version set to it."),
    "mark_list": ("LIST", ("entries",), "List a directory of a Mark server: a markdown index of links."),
    "mark_versions": ("VERSIONS", ("total", "current", "chain-valid"),
                      "List a document's versions, newest first, and whether their hash chain is intact."),
    "mark_archive": ("ARCHIVE", ("version", "modified"),
                     "Archive a document: FETCH then answers archived. Publishing an empty body restores it."),
}
APPEND_TOOL = {
    "name": "mark_append",
    "description": (
        "Append markdown to the end of a document; never merges. On status: conflict someone wrote "
        "in between: fetch the document, check whether your text is already there, and append again "
        "with the new version as expected_version if it is not."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "body": {"description": "markdown content to append", "type": "string"},
            "expected_version": {
                "description": "version number from a prior fetch for conflict detection; "
                               "when omitted or 0, resolved via VERSIONS",
                "type": "number",
            },
            "url": URL,
        },
        "required": ["url", "body"],
    },
}
UPDATE_SECTION_TOOL = {
    "name": "mark_update_section",
    "description": (
        "Replace one section of a markdown document: body is the new section, its heading line included "
        "(so it may rename the heading), and goes into the latest version, so writers editing other "
        "sections never conflict with you and you send only your section. section names the heading by "
        "its text ('## Results' or 'Results') or its anchor ('#results'; '#results-1' is the second "
        "'Results'); fetch url#anchor to read one section. With expected_version (the version you read "
        "the section from), a section someone changed since is merged: a clean merge publishes (merged: "
        "true), overlapping edits answer status: conflict, mergeable: false with the document, git-style "
        "markers in that section only: resolve them and send the section again with current-version as "
        "expected_version. reason: contention means others kept publishing: call again."
    ),
    "inputSchema": {
        "type": "object",
        "properties": {
            "body": {"description": "the new section, its heading line included", "type": "string"},
            "expected_version": {
                "description": "version number the section was read from: pass it, so that a section "
                               "someone changed since is merged, not replaced",
                "type": "number",
            },
            "section": {"description": "heading text ('## Results', 'Results') or anchor ('#results')",
                        "type": "string"},
            "url": URL,
        },
        "required": ["url", "section", "body"],
    },
}
WRITE_KEYS = ("version", "modified")  # what a write's answer shows first


def create_server(host: Optional[str] = None, token: Optional[str] = None, verify=True,
                  timeout: float = DEFAULT_TIMEOUT) -> MCPServer:
    """The MCP server, its tools bound to `host` (the server bare paths go to) and `token`.

    `verify` is MarkClient's: True, False (a development server) or a CA file.
    """
    logging.getLogger("quic").setLevel(logging.WARNING)  # aioquic's line per connection would flood the log
    if host is not None:
        MarkClient(host, token=token, verify=verify).close()  # a bad --host fails now, not at the first call
    documents = _Documents(host, token, verify, timeout)
    tools = [_tool(documents.reader(name, verb, first), name, description,
                   {"type": "object", "properties": {"url": URL}, "required": ["url"]})
             for name, (verb, first, description) in READ_TOOLS.items()]
    tools.append(_tool(documents.append, APPEND_TOOL["name"], APPEND_TOOL["description"],
                       APPEND_TOOL["inputSchema"]))
    tools.append(_tool(documents.publish, MARK_PUBLISH_TOOL["name"], MARK_PUBLISH_TOOL["description"],
                       MARK_PUBLISH_TOOL["inputSchema"]))
    tools.append(_tool(documents.update_section, UPDATE_SECTION_TOOL["name"], UPDATE_SECTION_TOOL["description"],
                       UPDATE_SECTION_TOOL["inputSchema"]))
    return MCPServer("mark", version=__version__, tools=tools, instructions=(
        "Mark documents are versioned. Fetch a document, edit it, and publish it with the version you "
        "fetched as expected_version; pass on_conflict='merge' (or 'candidate') so that a writer who "
        "published in between does not cost you your edit. To change one section only, read it with "
        "mark_fetch of url#anchor and write it with mark_update_section: writers of other sections never "
        "conflict with you."))


class _Documents:
    """The tools' bodies: a MarkClient per server and worker thread (the SDK runs each call on one)."""

    def __init__(self, host: Optional[str], token: Optional[str], verify, timeout: float):
        self._host, self._token, self._verify, self._timeout = host, token, verify, timeout
        self._clients = threading.local()

    def reader(self, name: str, verb: str, first: Tuple[str, ...]):
        """Tool `name`: it sends `verb` to a url and words the answer with the `first` keys first."""
        def read(url: str) -> CallToolResult:
            url, hash_sign, anchor = url.partition("#")
            if hash_sign and verb != "FETCH":
                raise ToolError(f"url must name a document or folder, without #{anchor}")
            client, path = self._target(url)
            # FETCH through fetch(): the body the version number names, never a lagging link's;
            # with #anchor, that section only.
            if hash_sign:
                return _answer(_exchange(lambda: fetch_section(client, path, hash_sign + anchor)), first)
            send = client.fetch if verb == "FETCH" else lambda path: client.request(verb, path)
            return _answer(_exchange(lambda: send(path)), first)

        read.__name__ = name  # which names the tool in the SDK's argument errors
        return read

    def append(self, url: str, body: str, expected_version: Any = None) -> CallToolResult:
        version = _version_argument(expected_version, required=False)
        if not body:
            raise ToolError("body must not be empty: there is nothing to append")
        client, path = self._target(url)
        if not version:
            current = _exchange(lambda: client.versions(path))
            if current.status != "ok":
                return _answer(current, WRITE_KEYS)
            version = int(current.metadata.get("current", "0"))
        return _answer(_exchange(lambda: client.append(path, body, version, {"agent": "mcp"})), WRITE_KEYS)

    def publish(self, url: str, body: str, expected_version: Any, on_conflict: str = "fail",
                metadata: Optional[Dict[str, str]] = None) -> CallToolResult:
        version = _version_argument(expected_version, required=True)
        if on_conflict not in ("fail", "merge", "candidate"):
            raise ToolError(f'on_conflict must be "fail", "merge" or "candidate", not {on_conflict!r}')
        sent = {"agent": "mcp", **(metadata or {})}
        client, path = self._target(url)
        response = _exchange(lambda: client.publish(path, body, version, sent))
        if response.status != "conflict":
            return _answer(response, WRITE_KEYS)
        result = _exchange(lambda: after_conflict(client, path, body, version, response, on_conflict, metadata=sent))
        if on_conflict == "fail" and result.repaired is None:
            return _answer(response, WRITE_KEYS)  # demarkus-mcp's answer, word for word
        return _result(result)

    def update_section(self, url: str, section: str, body: str, expected_version: Any = None) -> CallToolResult:
        version = _version_argument(expected_version, required=False) or None  # 0: no version, as mark_append's
        client, path = self._target(url)
        return _result(_exchange(lambda: update_section(client, path, section, body, version,
                                                        metadata={"agent": "mcp"})))

    def _target(self, url: str) -> Tuple[MarkClient, str]:
        """The client for the server `url` names, and the document path."""
        if url.startswith("/"):
            if self._host is None:
                raise ToolError("url is a bare path but no server is set: pass a full mark:// URL, "
                                "or start mark-mcp with --host")
            return self._client(self._host, self._token), url
        parts = urlsplit(url)
        if parts.scheme not in ("mark", "http", "https") or not parts.hostname:
            raise ToolError(f"url must be a bare path (/notes.md) or a mark://, http:// or https:// URL, not {url!r}")
        server = f"{parts.scheme}://{parts.netloc}"
        # The token is for the --host server: a URL naming another server must not get it.
        token = self._token if self._host and _origin(server) == _origin(self._host) else None
        return self._client(server, token), parts.path or "/"

    def _client(self, server: str, token: Optional[str]) -> MarkClient:
        clients = self._clients.__dict__
        if (server, token) not in clients:
            try:
                clients[server, token] = MarkClient(server, token=token, timeout=self._timeout,
                                                    verify=self._verify)
            except (ValueError, TypeError, ImportError) as error:
                raise ToolError(str(error)) from None
        return clients[server, token]


def _tool(fn, name: str, description: str, schema: Dict[str, Any]) -> Tool:
    """A tool whose input schema is demarkus-mcp's, word for word, not one derived from `fn`."""
    tool = Tool.from_function(fn, name=name, description=description)
    tool.parameters = schema
    return tool


def _exchange(call):
    """`call()`, with a transport failure or a Mark error mid-merge as the tool's error."""
    try:
        return call()
    except (MarkError, ValueError, TypeError) as error:  # the last two: what the client refuses to send
        raise ToolError(str(error)) from None


def _version_argument(value: Any, required: bool) -> Optional[int]:
    """expected_version as a whole number (JSON has only numbers), or None when it may be omitted."""
    if value is None and not required:
        return None
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())  # not inf, not nan
    if isinstance(value, bool) or not whole or value < 0:
        raise ToolError(f"expected_version must be a whole number >= 0 (the version you fetched), not {value!r}")
    return int(value)


def _origin(url: str) -> Tuple[str, str, int]:
    parts = urlsplit(url)
    default = {"mark": MARK_PORT, "http": 80, "https": 443}[parts.scheme]
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def _answer(response: MarkResponse, first: Tuple[str, ...]) -> CallToolResult:
    """A Mark answer as demarkus-mcp words it: status, the `first` keys, the rest sorted, the body."""
    keys = [key for key in first if key in response.metadata]
    keys += sorted(key for key in response.metadata if key not in first)
    text = f"status: {response.status}\n" + "".join(f"{key}: {response.metadata[key]}\n" for key in keys)
    if response.body:
        text += "\n" + response.body
    fields = {"status": response.status, **{key: response.metadata[key] for key in keys}, "body": response.body}
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=fields)


def _result(result: PublishResult) -> CallToolResult:
    fields = {name.replace("_", "-"): value for name, value in asdict(result).items() if value is not None}
    return CallToolResult(content=[TextContent(type="text", text=result.to_text())], structured_content=fields)


def main(argv=None) -> int:
    """`mark-mcp`: serve the tools over stdio until the client goes away, or over Streamable HTTP."""
    parser = argparse.ArgumentParser(
        prog="mark-mcp", description="MCP server for Mark documents: demarkus-mcp's tools, with "
                                     "on_conflict merging. The token comes from $MARK_TOKEN.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--host", help="the server bare paths go to: mark://host[:port], http:// or https://")
    parser.add_argument("--insecure", action="store_true",
                        help="do not check the server's certificate (a development server's)")
    parser.add_argument("--token", help="the write token; prefer $MARK_TOKEN: other users can read this "
                                        "flag in the process list")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per request")
    parser.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio",
                        help="stdio (the default: the MCP client runs this command) or streamable-http "
                             "(agents elsewhere connect to http://LISTEN/mcp)")
    parser.add_argument("--listen", default="127.0.0.1:8808", metavar="HOST:PORT",
                        help="where streamable-http listens (default 127.0.0.1:8808: this machine only)")
    args = parser.parse_args(argv)
    listen_host, _, listen_port = args.listen.rpartition(":")
    if not listen_host or not listen_port.isdigit() or not 0 < int(listen_port) < 65536:
        parser.error(f"--listen must be HOST:PORT, not {args.listen!r}")
    try:
        server = create_server(args.host, args.token or os.environ.get("MARK_TOKEN") or None,
                               verify=not args.insecure, timeout=args.timeout)
    except (ValueError, TypeError, ImportError) as error:  # what MarkClient makes of --host
        print(f"mark-mcp: --host {args.host}: {error}", file=sys.stderr)
        return 2
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=listen_host.strip("[]"), port=int(listen_port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
