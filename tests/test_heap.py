"""popsim.heap: the glibc heap settings around lowering, and nothing elsewhere."""
import pytest

from popsim import heap


class FakeLibc:
    def __init__(self):
        self.calls = []

    def mallopt(self, param, value):
        self.calls.append(("mallopt", param, value))
        return 1

    def malloc_trim(self, pad):
        self.calls.append(("malloc_trim", pad))
        return 1


def test_lowering_keeps_freed_blocks_and_hands_them_back_after_even_on_an_error(monkeypatch):
    libc = FakeLibc()
    monkeypatch.setattr(heap, "_glibc", lambda: libc)
    with pytest.raises(RuntimeError):
        with heap.lowering_heap():
            assert libc.calls == [("mallopt", -3, 32 << 20), ("mallopt", -1, 1 << 30)]
            raise RuntimeError("lowering failed")
    assert libc.calls[2:] == [("mallopt", -1, 64 << 20), ("malloc_trim", 0)]


def test_without_glibc_nothing_is_called(monkeypatch):
    monkeypatch.setattr(heap, "_glibc", lambda: None)
    with heap.lowering_heap():
        pass


def test_the_process_heap_is_found_once():
    first = heap._glibc()
    assert heap._glibc() is first
