"""tensor_tools/transient.py: large short-lived arrays in plain anonymous mappings."""

import mmap

import numpy as np
import pytest

from dnnpy.tensor_tools.transient import transient_empty


def test_small_arrays_are_ordinary_and_large_ones_are_mappings():
    small = transient_empty(1000, np.int32)
    assert small.dtype == np.int32 and small.shape == (1000,) and small.flags.owndata
    big = transient_empty(3 << 20, np.int32)                # 12 MiB: over numpy's 4 MiB hint
    assert big.dtype == np.int32 and big.shape == (3 << 20,) and big.flags.writeable
    assert isinstance(big.base, (mmap.mmap, memoryview)) or isinstance(big.base.obj, mmap.mmap)
    big[:] = np.arange(len(big), dtype=np.int32)            # writable, every page
    assert big[-1] == len(big) - 1 and big.sum(dtype=np.int64) == len(big) * (len(big) - 1) // 2
    assert transient_empty(0, np.uint8).shape == (0,)


def test_a_concatenation_into_one_keeps_the_values():
    parts = [np.arange(k, k + 700_000, dtype=np.int32) for k in range(0, 2_800_000, 700_000)]
    out = transient_empty(2_800_000, np.int32)
    np.concatenate(parts, out=out)
    assert np.array_equal(out, np.arange(2_800_000, dtype=np.int32))


def test_an_impossible_size_is_a_memory_error():
    with pytest.raises(MemoryError, match="transient_empty"):
        transient_empty(1 << 62, np.uint8)
