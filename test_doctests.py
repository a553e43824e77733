"""The usage examples in the module docstrings run, as difflib's do."""

import doctest

import pytest

import diff3
import mark_publish
import mark_server
import testkit
from mark_server import serve


@pytest.mark.parametrize("module", [diff3, mark_server, testkit], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed


def test_client_docstring_example_against_the_reference_server(tmp_path):
    with serve(tmp_path / "store", token="dev-secret", log=None) as server:
        result = doctest.testmod(mark_publish, extraglobs={"url": server.url})
    assert result.attempted and not result.failed
