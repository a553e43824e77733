"""Branch coverage of diff3.py, measured in every run of the suite; the `server` fixture.

A run that executes all of test_diff3.py fails when diff3.py is not 100%
branch-covered.  A run of part of it (a node id, -k, -m, a deselection)
is not judged.  Coverage starts here, before any test module imports diff3.
"""

import coverage
import pytest

_coverage = coverage.Coverage(branch=True, include=["*/diff3.py"], data_file=None, config_file=False)
_coverage.exclude("if __name__ == .__main__.:")
_coverage.start()
_partial = False


@pytest.fixture
def server(request, tmp_path):
    """The reference server on a free loopback port over a new store, running while the test does.

    Writes need the test module's TOKEN; a module with QUIC = True gets Mark over QUIC too.
    The rate limit is off (the module's RATE_LIMIT, if it sets one): tests measure other things.
    """
    from mark_server import serve

    quic = getattr(request.module, "QUIC", False)
    with serve(tmp_path / "store", token=request.module.TOKEN, log=None, quic=quic,
               rate_limit=getattr(request.module, "RATE_LIMIT", 0)) as running:
        yield running


def pytest_deselected(items):
    global _partial
    _partial = _partial or any(item.path.name == "test_diff3.py" for item in items)


def pytest_sessionfinish(session, exitstatus):
    _coverage.stop()
    if not _ran_all_of_test_diff3(session):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    percent = _coverage.report(show_missing=True, file=_Writer(reporter))
    if percent < 100 and session.exitstatus == 0:
        reporter.write_line(f"FAIL: diff3.py branch coverage {percent:.1f}% < 100%", red=True)
        session.exitstatus = 1


def _ran_all_of_test_diff3(session) -> bool:
    options = session.config.option
    if _partial or options.keyword or options.markexpr:
        return False
    if any("test_diff3.py::" in arg for arg in session.config.args):  # node ids: a part only
        return False
    return any(item.path.name == "test_diff3.py" for item in session.items)


class _Writer:
    """Sends coverage's report to pytest's terminal."""

    def __init__(self, reporter):
        self._reporter = reporter

    def write(self, text):
        self._reporter.write(text)
