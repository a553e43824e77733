"""The usage examples in the module docstrings run, as difflib's do."""

import doctest

import pytest

import diff3
import mark_client
import mark_publish
import mark_sections
import mark_server
import testkit


@pytest.mark.parametrize("module", [diff3, mark_client, mark_publish, mark_sections, mark_server, testkit], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    # Each runs as a reader would copy it: nothing is injected.
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed
