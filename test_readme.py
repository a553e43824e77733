"""Every code block of README.md runs as shown: python and sh blocks are run in an empty folder,
json and toml blocks are read, and the install-and-test block is what .ci/run runs."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
BLOCKS = re.findall(r"^```(\w*)\n(.*?)^```$", (HERE / "README.md").read_text(), flags=re.S | re.M)
INSTALL_AND_TEST = "pip install -e '.[test]'\npython -m pytest\n"
RUN = [(language, code) for language, code in BLOCKS if language in ("python", "sh") and code != INSTALL_AND_TEST]


def test_every_block_says_what_it_is():
    assert BLOCKS and all(language in ("python", "sh", "json", "toml", "text") for language, _ in BLOCKS)


@pytest.mark.parametrize("language,code", RUN, ids=[f"{language}-{n}" for n, (language, _) in enumerate(RUN)])
def test_block_runs(tmp_path, language, code):
    command = [sys.executable, "-c", code] if language == "python" else ["bash", "-e", "-c", code]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(HERE)}
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_data_blocks_read():
    import tomllib  # Python 3.11+, as the server's token files need

    for language, code in BLOCKS:
        if language == "json":
            json.loads(code)
        elif language == "toml":
            tomllib.loads(code)


def test_the_install_and_test_block_is_what_ci_runs():
    assert ("sh", INSTALL_AND_TEST) in BLOCKS
    ci = (HERE / ".ci" / "run").read_text().splitlines()
    assert all(line in ci for line in INSTALL_AND_TEST.splitlines())
