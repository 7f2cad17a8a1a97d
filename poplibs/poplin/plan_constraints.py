"""The ``planConstraints`` option (PopLibs' ConvOptions.cpp ValidateConvPlanConstraintsOption):
a JSON object that forces parts of the plan. Its shape, as PopLibs validates it:

    {"0": {"transform": {"swapOperands": true, "expandDims": [..], "outChanFlattenDims": [..],
                         "combineConvGroupsFactor": [n]},
           "partition": {"batchSplit": n, "convGroupSplit": n,
                         "fieldSplit": {"<dim>": n}, "kernelSplit": {"<dim>": n},
                         "inChanSplit": {"serial": n, "parallel": n} | n,
                         "outChanSplit": {"serial": n, "parallel": n} | n}},
     "method": "AMP" | "HMAC" | "VMAC" | {"type": "AMP", "convUnits": n, "convInputLoadElems": n},
     "inChansPerGroup": n, "partialChansPerGroup": n, "convGroupsPerGroup": n,
     "numAmpConvUnits": n}

Level "0" is the system level, the only partitioned one. A bare number for a channel split
constrains its parallel part. The result is frozen data (it keys the PlanningCache).
"""
import difflib
import json
from dataclasses import dataclass
from typing import Optional, Tuple

from ..poputil import PoplibsError
from .plan import METHODS

_PARTITION_SCALARS = {"batchSplit": "batch_split", "convGroupSplit": "conv_group_split"}
_PARTITION_PER_DIM = {"fieldSplit": "field_split", "kernelSplit": "kernel_split"}
_PARTITION_CHANNELS = {"inChanSplit": "in_chan", "outChanSplit": "out_chan"}
_TRANSFORM_ARRAYS = {"expandDims": "expand_dims", "outChanFlattenDims": "out_chan_flatten_dims",
                     "combineConvGroupsFactor": "combine_conv_groups_factor"}
_TOP_UNSIGNED = {"inChansPerGroup": "in_chans_per_group", "partialChansPerGroup": "partial_chans_per_group",
                 "convGroupsPerGroup": "conv_groups_per_group", "numAmpConvUnits": "conv_units"}
_METHOD_KEYS = {"type", "convUnits", "convInputLoadElems"}


@dataclass(frozen=True)
class PlanConstraints:
    """Parsed planConstraints; None (or an empty tuple) leaves that choice to the planner.
    Per-dimension splits are ((dim, split), ...)."""
    swap_operands: Optional[bool] = None
    expand_dims: Optional[Tuple[int, ...]] = None
    out_chan_flatten_dims: Optional[Tuple[int, ...]] = None
    combine_conv_groups_factor: Optional[Tuple[int, ...]] = None
    batch_split: Optional[int] = None
    conv_group_split: Optional[int] = None
    field_split: Tuple[Tuple[int, int], ...] = ()
    kernel_split: Tuple[Tuple[int, int], ...] = ()
    in_chan_serial: Optional[int] = None
    in_chan_parallel: Optional[int] = None
    out_chan_serial: Optional[int] = None
    out_chan_parallel: Optional[int] = None
    method: Optional[str] = None
    conv_units: Optional[int] = None
    conv_input_load_elems: Optional[int] = None
    in_chans_per_group: Optional[int] = None
    partial_chans_per_group: Optional[int] = None
    conv_groups_per_group: Optional[int] = None

    @property
    def empty(self) -> bool:
        return self == PlanConstraints()

    def describe(self) -> str:
        """The constraints that are set, as 'name=value' pairs (for error messages)."""
        set_ = [f"{k}={v}" for k, v in self.__dict__.items() if v not in (None, ())]
        return ", ".join(set_) or "none"


def did_you_mean(name: str, choices) -> str:
    """A hint naming the closest allowed name (difflib), or listing the allowed names."""
    choices = sorted(choices)
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    return f"did you mean '{close[0]}'?" if close else f"expected one of {', '.join(choices)}"


def _bad(path: str, problem: str) -> PoplibsError:
    return PoplibsError(f"option 'planConstraints': '{path}': {problem}")


def _unsigned(path: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        if isinstance(value, str) and value.isdigit():
            return int(value)
        raise _bad(path, f"expected an unsigned integer, found {value!r}")
    return value


def _positive(path: str, value) -> int:
    n = _unsigned(path, value)
    if n == 0:
        raise _bad(path, "a split must be >= 1, found 0")
    return n


def _object(path: str, value) -> dict:
    if not isinstance(value, dict):
        raise _bad(path, f"must be an object, found {value!r}")
    return value


def _unknown(path: str, key: str, allowed) -> PoplibsError:
    return _bad(f"{path}.{key}" if path else key,
                f"{key!r} is not a plan constraint here; allowed: {', '.join(sorted(allowed))}; "
                f"{did_you_mean(key, allowed)}")


def _partition(path: str, tree, out: dict) -> None:
    allowed = set(_PARTITION_SCALARS) | set(_PARTITION_PER_DIM) | set(_PARTITION_CHANNELS)
    for key, value in _object(path, tree).items():
        sub = f"{path}.{key}"
        if key in _PARTITION_SCALARS:
            out[_PARTITION_SCALARS[key]] = _positive(sub, value)
        elif key in _PARTITION_PER_DIM:
            dims = []
            for dim, split in _object(sub, value).items():
                if not str(dim).isdigit():
                    raise _bad(f"{sub}.{dim}", f"a dimension index must be a non-negative integer, found {dim!r}")
                dims.append((int(dim), _positive(f"{sub}.{dim}", split)))
            out[_PARTITION_PER_DIM[key]] = tuple(sorted(dims))
        elif key in _PARTITION_CHANNELS:
            prefix = _PARTITION_CHANNELS[key]
            if isinstance(value, dict):
                for part, split in value.items():
                    if part not in ("serial", "parallel"):
                        raise _bad(f"{sub}.{part}", f"{part!r} is not either 'parallel' or 'serial'")
                    out[f"{prefix}_{part}"] = _positive(f"{sub}.{part}", split)
            else:
                out[f"{prefix}_parallel"] = _positive(sub, value)
        else:
            raise _unknown(path, key, allowed)


def _transform(path: str, tree, out: dict) -> None:
    allowed = {"swapOperands"} | set(_TRANSFORM_ARRAYS)
    for key, value in _object(path, tree).items():
        sub = f"{path}.{key}"
        if key == "swapOperands":
            if not isinstance(value, bool):
                raise _bad(sub, f"expected true or false, found {value!r}")
            out["swap_operands"] = value
        elif key in _TRANSFORM_ARRAYS:
            if not isinstance(value, list):
                raise _bad(sub, f"expected an array of unsigned integers, found {value!r}")
            out[_TRANSFORM_ARRAYS[key]] = tuple(_unsigned(sub, v) for v in value)
        else:
            raise _unknown(path, key, allowed)


def _method(value, out: dict) -> None:
    if isinstance(value, str):
        value = {"type": value}
    tree = _object("method", value)
    for key in tree:
        if key not in _METHOD_KEYS:
            raise _unknown("method", key, _METHOD_KEYS)
    kind = tree.get("type")
    if kind is not None:
        if not isinstance(kind, str) or kind.upper() not in METHODS:
            raise _bad("method", f"unknown method {kind!r}: one of {', '.join(METHODS)}")
        out["method"] = kind.upper()
    if "convUnits" in tree:
        out["conv_units"] = _positive("method.convUnits", tree["convUnits"])
    if "convInputLoadElems" in tree:
        out["conv_input_load_elems"] = _positive("method.convInputLoadElems", tree["convInputLoadElems"])



def parse_plan_constraints(value) -> PlanConstraints:
    """planConstraints given as a JSON string (Poplar's OptionFlags) or an already parsed
    dict; "" means none. A malformed or unknown entry is a PoplibsError naming its path."""
    if isinstance(value, PlanConstraints):
        return value
    if value is None or value == "":
        return PlanConstraints()
    if isinstance(value, str):
        try:
            tree = json.loads(value)
        except json.JSONDecodeError as e:
            raise PoplibsError(f"option 'planConstraints': not valid JSON ({e.msg} at character {e.pos}) in "
                               f"{value!r}") from None
    else:
        tree = value
    if not isinstance(tree, dict):
        raise PoplibsError(f"option 'planConstraints': plan constraints must be a JSON object, found {tree!r}")
    out: dict = {}
    allowed_top = {"method"} | set(_TOP_UNSIGNED) | {"0"}
    for key, sub in tree.items():
        if key == "method":
            _method(sub, out)
        elif key in _TOP_UNSIGNED:
            out[_TOP_UNSIGNED[key]] = _positive(key, sub)
        elif key.lstrip("-").isdigit():
            if int(key) != 0:
                raise _bad(key, f"level {key} does not exist: a plan has one partitioned level, \"0\" (the tiles of "
                                "one IPU)")
            for part, part_tree in _object(key, sub).items():
                if part == "transform":
                    _transform(f"{key}.transform", part_tree, out)
                elif part == "partition":
                    _partition(f"{key}.partition", part_tree, out)
                else:
                    raise _bad(f"{key}.{part}", f"{part} is not a valid sub-domain of the plan. Must be either "
                                                "'transform' or 'partition'")
        else:
            raise _unknown("", key, allowed_top)
    return PlanConstraints(**out)
