"""C++ MultiVertex codelets: compute(workerId) runs once for every id in [0, numWorkers())
(Poplar's constant 6) on any target, however many worker contexts it has."""
from pathlib import Path

import numpy as np
import pytest

from popsim.codelet import cpp
from popsim.codelet.abi import run_compiled

pytestmark = pytest.mark.compiler

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def multi():
    (vt,) = [vt for vt in cpp.vertex_types_from_file(DATA / "dialect_codelets.cpp",
                                                     "-DOFFSET=1 -Wall -Wextra -Werror -pedantic -Wno-uninitialized")
             if vt.name == "Multi"]
    return vt


@pytest.mark.parametrize("workers", [6, 1, 4, 8])
def test_every_id_runs_once_on_any_target(multi, workers):
    """6: one id per context; 1 (the CPU target) and 4: the last context also runs the
    missing ids; 8: the extra contexts run nothing. A MultiVertex splitting its work by
    numWorkers() covers all of it."""
    data = np.arange(20, dtype=np.float32)
    seen = np.zeros(6, np.uint32)
    ret, ctx = run_compiled(multi, [data, seen], num_workers=workers)
    assert ret == 1 and ctx.error == 0
    np.testing.assert_array_equal(data, np.arange(20, dtype=np.float32) * 2)
    np.testing.assert_array_equal(seen, 600 + np.arange(6))
