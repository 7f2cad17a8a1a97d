"""QUARTER, Poplar's 8-bit float: popops.cast from FLOAT and HALF to QUARTER and back on the
engine, against ml_dtypes' float8_e4m3fnuz / float8_e5m2fnuz (Graphcore's F143 and F152,
ONNX's FNUZ types) as an independent reference: round to nearest even, subnormals, no
negative zero, NaN (and, on an IPUModel, overflow and infinities) to the NaN byte; the
metadata scale; Cast1D and Cast2D vertices; and the errors of tensors without metadata."""
import numpy as np
import pytest

import popsim
from popsim import FLOAT, HALF, QUARTER, QUARTER_METADATA, UNSIGNED_CHAR, QuarterMetadata, popops, poputil
from popsim.program import Copy, Sequence

from popops_harness import MAPPING, mapped, run, vertex_kinds

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes gives the float8 reference (pip install ml_dtypes)")
F143, F152 = QuarterMetadata.Format.F143, QuarterMetadata.Format.F152
REFERENCE = {F143: ml_dtypes.float8_e4m3fnuz, F152: ml_dtypes.float8_e5m2fnuz}


def _expected_bytes(values, fmt, scale):
    """ml_dtypes' RNE conversion of values * 2**-scale, overflow and infinities to NaN (0x80)."""
    x = values.astype(np.float32) * np.float32(2.0 ** -scale)
    with np.errstate(over="ignore", invalid="ignore"):
        q = x.astype(REFERENCE[fmt])
    big = float(ml_dtypes.finfo(REFERENCE[fmt]).max)
    b = q.view(np.uint8).copy()
    b[~np.isfinite(x) | (np.abs(q.astype(np.float32)) > big)] = 0x80   # ml_dtypes: non-saturating, as nanoo
    return b


def _values(n=24, seed=0):
    rng = np.random.default_rng(seed)
    base = np.array([0.0, -0.0, 1e-7, -1e-7, 0.47892547, -0.7229038, 240.0, 244.0, 248.0, 250.0, 57344.0, 61440.0,
                     2.0 ** -10, 2.0 ** -11, 3 * 2.0 ** -11, 2.0 ** -17, 1.0 + 2.0 ** -4, 1.0 + 3 * 2.0 ** -4,
                     np.nan, np.inf, -np.inf, 1e6, -1e6, 0.3], np.float32)
    return np.concatenate([base, rng.normal(0, 30, n - base.size).astype(np.float32)])[:n].reshape(4, 6)


@pytest.mark.parametrize("fmt", [F143, F152], ids=["F143", "F152"])
@pytest.mark.parametrize("src", [FLOAT, HALF], ids=lambda t: t.name)
def test_cast_to_quarter_and_back_against_ml_dtypes(g, small_device, fmt, src):
    a = mapped(g, src, "a")
    md = popsim.create_constant_metadata_tensor(g, fmt, 0)
    prog = Sequence()
    q = popops.cast(g, a, QUARTER, prog, metadata=md)
    back = popops.cast(g, q, src, prog)
    with np.errstate(over="ignore"):   # 1e6 is inf in HALF
        values = _values().astype(src.numpy)
    engine, (got_q, got_back) = run(g, small_device, prog, [q, back], {a: values})
    assert q.dtype == QUARTER and q.metadata is md and got_q.dtype == np.uint8
    want = _expected_bytes(values, fmt, 0)
    np.testing.assert_array_equal(got_q, want)
    np.testing.assert_array_equal(got_back, want.view(REFERENCE[fmt]).astype(np.float32).astype(src.numpy))
    kinds = vertex_kinds(engine)
    assert kinds[f"popops::Cast1D<{src.cpp},quarter>"]["instances"] == 2   # tiles 0 and 3: one region each
    assert kinds[f"popops::Cast2D<quarter,{src.cpp}>"]["instances"] >= 2


@pytest.mark.parametrize("fmt,scale", [(F143, 3), (F143, -5), (F152, 7), (F152, -32), (F143, 31)])
def test_the_metadata_scale_multiplies_the_value(g, small_device, fmt, scale):
    a = g.add_variable(FLOAT, (24,), "a")
    g.set_tile_mapping(a, 0)
    md = popsim.create_constant_metadata_tensor(g, fmt, scale)
    prog = Sequence()
    q = popops.cast(g, a, QUARTER, prog, metadata=md)
    back = popops.cast(g, q, FLOAT, prog)
    values = _values().reshape(-1) * np.float32(2.0 ** scale)
    _, (got_q, got_back) = run(g, small_device, prog, [q, back], {a: values})
    want = _expected_bytes(values, fmt, scale)
    np.testing.assert_array_equal(got_q, want)
    np.testing.assert_array_equal(got_back, want.view(REFERENCE[fmt]).astype(np.float32) * np.float32(2.0 ** scale))


def test_every_byte_decodes_as_ml_dtypes_does(g, small_device):
    q143 = g.add_variable(QUARTER, (256,), "q143", metadata=popsim.create_constant_metadata_tensor(g, F143))
    q152 = g.add_variable(QUARTER, (256,), "q152", metadata=popsim.create_constant_metadata_tensor(g, F152))
    for t in (q143, q152):
        g.set_tile_mapping(t, 1)
    prog = Sequence()
    f = popops.cast(g, q143, FLOAT, prog)
    h = popops.cast(g, q152, HALF, prog)
    every = np.arange(256, dtype=np.uint8)
    _, (got_f, got_h) = run(g, small_device, prog, [f, h], {q143: every, q152: every})
    np.testing.assert_array_equal(got_f, every.view(ml_dtypes.float8_e4m3fnuz).astype(np.float32))
    np.testing.assert_array_equal(got_h, every.view(ml_dtypes.float8_e5m2fnuz).astype(np.float16))


def test_quarter_bytes_stream_and_copy_as_unsigned_char(g, small_device):
    md = popsim.create_constant_metadata_tensor(g, F152, 0)
    raw = g.add_variable(UNSIGNED_CHAR, (4, 6), "raw")
    g.set_tile_mapping(raw, MAPPING)
    q = g.clone(raw, "q", QUARTER, metadata=md)
    prog = Sequence([Copy(raw, q.reinterpret(UNSIGNED_CHAR))])   # PopART's way into a QUARTER tensor
    out = popops.cast(g, q, FLOAT, prog)
    data = np.array([0x00, 0x3C, 0xBC, 0x7F, 0xFF, 0x80] * 4, np.uint8).reshape(4, 6)
    _, (got,) = run(g, small_device, prog, [out], {raw: data})
    np.testing.assert_array_equal(got, data.view(ml_dtypes.float8_e5m2fnuz).astype(np.float32))
    assert g.clone(q).metadata is md and q.reinterpret(UNSIGNED_CHAR).metadata is None


def test_quarter_needs_its_metadata_and_casts_only_float_and_half(g):
    md = popsim.create_constant_metadata_tensor(g, F143, 0)
    a = g.add_variable(FLOAT, (4,), "a")
    g.set_tile_mapping(a, 0)
    prog = Sequence()
    with pytest.raises(popsim.TensorCreationError, match="needs its metadata"):
        g.add_variable(QUARTER, (4,), "q")
    with pytest.raises(popsim.TensorCreationError, match="metadata goes with QUARTER tensors only"):
        g.add_variable(FLOAT, (4,), "f", metadata=md)
    with pytest.raises(popsim.TensorCreationError, match="one-element QUARTER_METADATA"):
        g.add_variable(QUARTER, (4,), "q", metadata=a)
    with pytest.raises(poputil.PoplibsError, match="metadata is required when casting to QUARTER"):
        popops.cast(g, a, QUARTER, prog)
    with pytest.raises(poputil.PoplibsError, match="only then"):
        popops.cast(g, a, HALF, prog, metadata=md)
    i = g.add_variable(popsim.INT, (4,), "i")
    g.set_tile_mapping(i, 0)
    with pytest.raises(poputil.PoplibsError, match="FLOAT and HALF to and from QUARTER"):
        popops.cast(g, i, QUARTER, prog, metadata=md)
    with pytest.raises(popsim.TensorCreationError, match="clone it as QUARTER"):
        g.add_variable(UNSIGNED_CHAR, (4,), "u").reinterpret(QUARTER)
    with pytest.raises(poputil.PoplibsError):
        popops.add(g, popops.cast(g, a, QUARTER, prog, metadata=md), a, prog)   # no arithmetic on QUARTER


def test_quarter_metadata_bytes():
    assert QuarterMetadata(F143, 0).binary == 0 and QuarterMetadata(F152, 0).binary == 0x80
    assert QuarterMetadata(F143, -1).binary == 0x3F and QuarterMetadata(F152, 5).binary == 0x85
    for b in range(256):
        if b & 0x40 == 0:   # bit 6 is unused
            assert QuarterMetadata.from_binary(b).binary == b
    with pytest.raises(popsim.TypeError, match=r"\[-32, 31\]"):
        QuarterMetadata(F143, 32)
    assert QUARTER.size == 1 and QUARTER_METADATA.size == 1 and not QUARTER.is_integral
    assert popsim.types.as_type(np.uint8) == UNSIGNED_CHAR
