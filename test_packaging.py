"""The package: one version, said by every file and by the metadata; every CLI says it."""

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest

import diff3
import mark_publish
import mark_server


def test_every_file_says_the_release_the_metadata_says():
    versions = {diff3.__version__, mark_publish.__version__, mark_server.__version__}
    assert versions == {importlib.metadata.version("mark-publish")}


@pytest.mark.parametrize("module,prog", [("diff3", "mark-diff3"), ("mark_publish", "mark-publish"),
                                         ("mark_server", "mark-server")])
def test_python_dash_m_version(module, prog):
    run = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True,
                         cwd=Path(__file__).parent, timeout=60)
    assert (run.returncode, run.stdout) == (0, f"{prog} {mark_publish.__version__}\n")
