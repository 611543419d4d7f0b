"""qwen_lsp.heap: freed heap memory handed back to the system where glibc can, a no-op elsewhere."""

from __future__ import annotations

import ctypes
import sys

import pytest

from qwen_lsp import heap


@pytest.fixture(autouse=True)
def fresh_lookup():
    heap._malloc_trim.cache_clear()
    yield
    heap._malloc_trim.cache_clear()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_freed_blocks_are_given_back_on_glibc() -> None:
    try:
        ctypes.CDLL(None).malloc_trim
    except AttributeError:
        pytest.skip("a C library without malloc_trim (musl)")
    blocks = [bytes(4096) for _ in range(20_000)]  # ~80 MB from malloc (over pymalloc's 512 bytes)
    del blocks
    assert heap.release_free_memory() is True


def test_elsewhere_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert heap.release_free_memory() is False


def test_a_c_library_without_malloc_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoTrim:
        def __init__(self, _name: object) -> None:
            pass

    monkeypatch.setattr(heap.ctypes, "CDLL", NoTrim)
    assert heap.release_free_memory() is False
