"""The package: one version, said by every file and by the metadata; every CLI says it."""

import ast
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

import diff3
import mark_mcp
import mark_client
import mark_publish
import mark_sections
import mark_quic
import mark_server


def test_every_file_says_the_release_the_metadata_says():
    versions = {diff3.__version__, mark_client.__version__, mark_publish.__version__, mark_sections.__version__,
                mark_quic.__version__, mark_server.__version__, mark_mcp.__version__}
    assert versions == {importlib.metadata.version("mark-publish")}


@pytest.mark.parametrize("module,prog", [("diff3", "mark-diff3"), ("mark_publish", "mark-publish"),
                                         ("mark_server", "mark-server"), ("mark_mcp", "mark-mcp")])
def test_python_dash_m_version(module, prog):
    run = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True,
                         cwd=Path(__file__).parent, timeout=60)
    assert (run.returncode, run.stdout) == (0, f"{prog} {mark_publish.__version__}\n")


# Python with aioquic unimportable, to see what a core-only install does.
WITHOUT_AIOQUIC = "import sys; sys.modules['aioquic'] = None\n"


def run_without_aioquic(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_AIOQUIC + code], capture_output=True, text=True,
                          cwd=Path(__file__).parent, timeout=60)


def test_http_needs_no_aioquic_and_mark_urls_say_what_to_install(tmp_path):
    run = run_without_aioquic(
        "import tempfile\n"
        "from mark_server import serve\n"
        "from mark_publish import MarkClient\n"
        "with serve(tempfile.mkdtemp(), log=None) as server:\n"
        "    print(MarkClient(server.url).fetch('/health').status)\n"
        "try:\n"
        "    MarkClient('mark://127.0.0.1')\n"
        "except ImportError as error:\n"
        "    print(error)\n"
        "try:\n"
        "    serve(tempfile.mkdtemp(), log=None, quic=True)\n"
        "except ImportError as error:\n"
        "    print(error)\n")
    assert run.stdout.splitlines() == [  # one exception type, which says what to install
        "ok",
        "mark:// URLs need aioquic and mark_quic.py beside mark_client.py: pip install 'mark-publish[quic]'",
        "Mark over QUIC needs aioquic: pip install 'mark-publish[quic]'",
    ], run.stderr


def test_the_mcp_server_says_what_to_install():
    run = subprocess.run([sys.executable, "-c", "import sys; sys.modules['mcp'] = None\nimport mark_mcp"],
                         capture_output=True, text=True, cwd=Path(__file__).parent, timeout=60)
    assert "ImportError: the MCP server needs the mcp SDK: pip install 'mark-publish[mcp]'" in run.stderr


def test_no_module_imports_another_modules_private_name():
    """Each file is read and vendored on its own: what it takes from another is that one's public API."""
    ours = {path.stem for path in Path(__file__).parent.glob("*.py")}
    private = []
    for path in sorted(Path(__file__).parent.glob("mark_*.py")) + [Path(__file__).parent / "diff3.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in ours:
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert private == []
