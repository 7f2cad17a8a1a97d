"""matmul and convolution options (PopLibs' documentation; PopLibs' MatMul.cpp
parseMatMulOptions and ConvOptions.cpp parseConvOptions), parsed once into a frozen
ConvOptions that the planner and the PlanningCache key on.

Values may be strings, as Poplar's OptionFlags hold them ("0.6", "true", "half"), or Python
values (0.6, True, popsim.HALF). An unknown key or a bad value is a PoplibsError naming the
option, the value found and what is allowed (with a did-you-mean for misspelt keys).
"""
import math
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional

import popsim

from ..poputil import PoplibsError
from .plan_constraints import PlanConstraints, did_you_mean, parse_plan_constraints

#: the conv ``pass`` values (PopLibs' Pass)
PASSES = ("NONE", "NONE_MATMUL", "INFERENCE_FWD", "TRAINING_FWD", "TRAINING_BWD", "TRAINING_WU",
          "FC_INFERENCE_FWD", "FC_TRAINING_FWD", "FC_TRAINING_BWD", "FC_TRAINING_WU")
#: matmul's ``fullyConnectedPass`` values and the conv pass each plans as
FULLY_CONNECTED_PASSES = {"NONE": "NONE_MATMUL", "INFERENCE_FWD": "FC_INFERENCE_FWD",
                          "TRAINING_FWD": "FC_TRAINING_FWD", "TRAINING_BWD": "FC_TRAINING_BWD",
                          "TRAINING_WU": "FC_TRAINING_WU"}
_PARTIALS_TYPES = {"float": popsim.FLOAT, "half": popsim.HALF}


@dataclass(frozen=True)
class ConvOptions:
    """Every option the planner and executor read, with PopLibs' defaults. ``pass_`` is the
    conv pass (a matmul's fullyConnectedPass mapped as PopLibs maps it)."""
    available_memory_proportion: float = 0.6
    pass_: str = "NONE"
    partials_type: object = popsim.FLOAT
    inter_tile_partials_type: object = popsim.FLOAT
    inter_ipu_partials_type: object = popsim.FLOAT
    use_128bit_conv_unit_load: bool = False
    enable_multi_stage_reduce: bool = True
    enable_fast_reduce: bool = False
    remap_output_tensor: bool = True
    enable_conv_dithering: bool = False
    plan_constraints: PlanConstraints = PlanConstraints()
    plan_constraints_output_filename: str = ""
    gather_output: bool = False
    disable_sr_for_amp_vertices: bool = False
    enable_tile_level_expand_dims: bool = False
    disable_transformations: bool = False
    slic_vmac16: bool = False
    input_rhs_is_pre_arranged: bool = False

    @property
    def is_fully_connected(self) -> bool:
        """A matmul's pass (PopLibs plans these with swapOperands preferred)."""
        return self.pass_ == "NONE_MATMUL" or self.pass_.startswith("FC_")


def _describe(value) -> str:
    return repr(value)


def _error(option: str, value, allowed: str) -> PoplibsError:
    return PoplibsError(f"option {option!r}: invalid value {_describe(value)}; expected {allowed}")


def _parse_proportion(option: str, value) -> float:
    if isinstance(value, bool):
        raise _error(option, value, "a number >= 0 (the proportion of tile memory for temporary data)")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise _error(option, value, "a number >= 0 (the proportion of tile memory for temporary data)") from None
    if not math.isfinite(number) or number < 0:
        raise _error(option, value, "a finite number >= 0 (0 plans for the least memory)")
    return number


def _parse_bool(option: str, value) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    raise _error(option, value, "'true' or 'false'")


def _parse_partials_type(option: str, value):
    if isinstance(value, str) and value in _PARTIALS_TYPES:
        return _PARTIALS_TYPES[value]
    if isinstance(value, popsim.Type) and value in (popsim.FLOAT, popsim.HALF):
        return value
    raise _error(option, value, "'float' or 'half' (or popsim.FLOAT, popsim.HALF)")


def _parse_enum(choices) -> Callable:
    def parse(option: str, value):
        if isinstance(value, str) and value in choices:
            return value
        hint = did_you_mean(str(value), choices) if isinstance(value, str) else ""
        raise _error(option, value, f"one of {', '.join(choices)}" + (f"; {hint}" if hint else ""))
    return parse


def _parse_string(option: str, value) -> str:
    if not isinstance(value, str):
        raise _error(option, value, "a string")
    return value


def _parse_constraints(option: str, value) -> PlanConstraints:
    return parse_plan_constraints(value)


# key -> (ConvOptions field, parser)
_COMMON = {
    "availableMemoryProportion": ("available_memory_proportion", _parse_proportion),
    "partialsType": ("partials_type", _parse_partials_type),
    "partialsType.interTile": ("inter_tile_partials_type", _parse_partials_type),
    "use128BitConvUnitLoad": ("use_128bit_conv_unit_load", _parse_bool),
    "enableMultiStageReduce": ("enable_multi_stage_reduce", _parse_bool),
    "enableFastReduce": ("enable_fast_reduce", _parse_bool),
    "remapOutputTensor": ("remap_output_tensor", _parse_bool),
    "planConstraints": ("plan_constraints", _parse_constraints),
    "disableSRForAMPVertices": ("disable_sr_for_amp_vertices", _parse_bool),
}
MAT_MUL_OPTIONS: Dict[str, tuple] = dict(_COMMON, **{
    "fullyConnectedPass": ("pass_", _parse_enum(tuple(FULLY_CONNECTED_PASSES))),
    "inputRHSIsPreArranged": ("input_rhs_is_pre_arranged", _parse_bool),
    "gatherOutput": ("gather_output", _parse_bool),
})
CONV_OPTIONS: Dict[str, tuple] = dict(_COMMON, **{
    "pass": ("pass_", _parse_enum(PASSES)),
    "partialsType.interIPU": ("inter_ipu_partials_type", _parse_partials_type),
    "enableConvDithering": ("enable_conv_dithering", _parse_bool),
    "planConstraintsOutputFilename": ("plan_constraints_output_filename", _parse_string),
    "gatherConvOutput": ("gather_output", _parse_bool),
    "experimental.slicVmac16": ("slic_vmac16", _parse_bool),
    "enableTileLevelExpandDims": ("enable_tile_level_expand_dims", _parse_bool),
    "disableTransformations": ("disable_transformations", _parse_bool),
})


def _parse(options: Optional[Mapping], table: Dict[str, tuple], what: str, defaults: Dict[str, object]) -> ConvOptions:
    if options is None:
        options = {}
    if isinstance(options, ConvOptions):
        return options
    if not isinstance(options, Mapping):
        raise PoplibsError(f"{what}: options must be a dict of option name to value (Poplar's OptionFlags), found "
                           f"{type(options).__name__}")
    values = dict(defaults)
    for key, value in options.items():
        if key not in table:
            raise PoplibsError(f"{what}: unknown option {key!r}; {did_you_mean(str(key), table)} "
                               f"(the {what} options are {', '.join(sorted(table))})")
        field, parse = table[key]
        values[field] = parse(key, value)
    if what == "matmul" and values.get("pass_") in FULLY_CONNECTED_PASSES:
        values["pass_"] = FULLY_CONNECTED_PASSES[values["pass_"]]
    return ConvOptions(**values)


def parse_mat_mul_options(options: Optional[Mapping] = None) -> ConvOptions:
    """A matmul's options (MAT_MUL_OPTIONS keys), fullyConnectedPass mapped to the conv pass
    it plans as (NONE -> NONE_MATMUL, TRAINING_FWD -> FC_TRAINING_FWD, ...)."""
    return _parse(options, MAT_MUL_OPTIONS, "matmul", {"pass_": "NONE"})


def parse_conv_options(options: Optional[Mapping] = None) -> ConvOptions:
    """A convolution's options (CONV_OPTIONS keys)."""
    return _parse(options, CONV_OPTIONS, "convolution", {})
