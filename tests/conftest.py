from collections.abc import Iterator

import pytest

from tests.vllm_double import VLLMDouble


@pytest.fixture
def vllm() -> Iterator[VLLMDouble]:
    """A started vLLM test double (not vLLM) on a free port; stopped after the test."""
    with VLLMDouble() as double:
        yield double
