"""popsim/codec.py: dataclasses saved and read back by their fields' annotations."""
import enum
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest

import popsim
from popsim.codec import NOT_SAVED, CodecError, decode, encode
from popsim.types import Type


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Inner:
    name: str
    values: np.ndarray
    scale: float = 1.0


@dataclass
class Outer:
    count: int
    flag: bool
    colour: Colour
    dtype: Type
    inner: Inner
    items: List[Inner]
    by_name: Dict[str, np.ndarray]
    pairs: List[Tuple[int, str]]
    shape: Tuple[int, ...]
    maybe: Optional[np.ndarray] = None
    note: Optional[str] = None
    local: object = field(default="process only", metadata=NOT_SAVED)


def sample() -> Outer:
    return Outer(count=3, flag=True, colour=Colour.BLUE, dtype=popsim.HALF,
                 inner=Inner("a", np.arange(4, dtype=np.int64), 2.5),
                 items=[Inner("b", np.ones((2, 3))), Inner("c", np.zeros(0, np.uint8))],
                 by_name={"x": np.array([1.5]), "y": np.array([7], np.int32)},
                 pairs=[(1, "one"), (2, "two")], shape=(2, 3), maybe=np.array([True, False]), local=object())


def test_round_trip_over_every_annotation_kind():
    obj = sample()
    header, arrays = encode(obj)
    assert set(arrays) == {"inner.values", "items.0.values", "items.1.values", "by_name.x", "by_name.y", "maybe"}
    assert "local" not in header
    import json
    back = decode(Outer, json.loads(json.dumps(header)), arrays)
    assert back.local == "process only"  # not saved: its default
    for name in ("count", "flag", "colour", "dtype", "pairs", "shape", "note"):
        assert getattr(back, name) == getattr(obj, name), name
    assert back.dtype is popsim.HALF and isinstance(back.shape, tuple) and isinstance(back.pairs[0], tuple)
    np.testing.assert_array_equal(back.inner.values, obj.inner.values)
    assert back.inner.scale == 2.5 and [i.name for i in back.items] == ["b", "c"]
    assert back.by_name["y"].dtype == np.int32 and back.maybe.tolist() == [True, False]


def test_a_new_field_is_saved_without_another_edit():
    """What issue 7 asks of the executable format: one edit, the field."""
    @dataclass
    class Grown(Inner):
        extra: Dict[str, List[int]] = field(default_factory=dict)
        weights: Optional[np.ndarray] = None

    obj = Grown("g", np.arange(3), 1.0, {"k": [1, 2]}, np.full(2, 0.5))
    header, arrays = encode(obj)
    back = decode(Grown, header, arrays)
    assert back.extra == {"k": [1, 2]} and back.weights.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("path, value, expected", [
    (("count",), "3", "count: expected an integer"),
    (("flag",), 1, "flag: expected true or false"),
    (("colour",), "green", "colour: expected one of \\['red', 'blue'\\]"),
    (("dtype",), "float128", "dtype: expected an element type name"),
    (("inner", "values"), "nowhere", "inner.values: expected the name of an array"),
    (("items",), {"b": 1}, "items: expected a list"),
    (("pairs", 0), [1], "pairs.0: expected a list of 2 items"),
    (("inner",), None, "inner: expected a Inner object"),
])
def test_a_value_that_does_not_match_its_annotation_names_its_path(path, value, expected):
    header, arrays = encode(sample())
    node = header
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(CodecError, match=expected):
        decode(Outer, header, arrays)


def test_a_missing_field_is_named():
    header, arrays = encode(sample())
    del header["inner"]["scale"]
    with pytest.raises(CodecError, match="inner.scale: missing"):
        decode(Outer, header, arrays)
