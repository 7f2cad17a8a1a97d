"""Engine options: Poplar's keys where Poplar has one, popsim's own under ``popsim.*``.

Values are strings, as in Poplar's OptionFlags (Python bools and numbers are accepted
and converted). The JSON objects in POPLAR_ENGINE_OPTIONS and POPSIM_ENGINE_OPTIONS
override what a program passes (POPSIM_ENGINE_OPTIONS wins a key both set).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional, Tuple

from . import config
from .errors import InvalidOptionError, did_you_mean

__all__ = ["EngineOptions", "OPTIONS", "NOT_POPLAR_KEYS"]

_BOOL = ("true", "false")


@dataclass(frozen=True)
class OptionSpec:
    default: str
    choices: Optional[Tuple[str, ...]] = None   # allowed values, when enumerated
    check: Optional[Callable[[str], bool]] = None
    help: str = ""
    maximum: Optional[int] = None  # integer options with an upper bound
    wanted: str = "a non-negative integer"  # what check accepts, for the error
    refused: str = ""  # Poplar's key, which popsim refuses with this advice when given


def _non_negative_number(v: str) -> bool:
    try:
        return v.isascii() and math.isfinite(float(v)) and float(v) >= 0
    except ValueError:
        return False


def _non_negative_int(v: str) -> bool:
    # ASCII digits only: str.isdigit() also accepts "²", which int() refuses
    return v.isascii() and v.isdigit()


def _spec(default: str, help_text: str = "", choices=None, check=None) -> OptionSpec:
    return OptionSpec(default, tuple(choices) if choices else None, check, help_text)


def _flag(default: str, help_text: str = "") -> OptionSpec:
    return _spec(default, help_text, _BOOL)


OPTIONS: Dict[str, OptionSpec] = {
    # Reports (Poplar's keys; what each writes: popsim/report/files.py, docs/profiling.md).
    "autoReport.all": _flag("false", "turn on every autoReport.output* option not set to false"),
    "autoReport.directory": _spec(".", "where report files go"),
    "autoReport.outputGraphProfile": _flag("false", "profile.json (and report.html) when the engine is built"),
    "autoReport.outputExecutionProfile": _flag("false", "profile.json (and report.html) with what the runs cost"),
    "autoReport.outputDebugInfo": _flag("false", "debug.json: the debug names of programs, steps, compute sets"),
    "autoReport.outputLoweredVars": _flag("false", "vars.json: where each variable's regions lie"),
    "autoReport.outputArchive": _flag("false", "archive.popsimexe: the compiled executable"),
    "autoReport.outputSerializedGraph": _flag("false", "serialized_graph.json: the graph's tensors and vertices"),
    "autoReport.streamAtEachRun": _flag("true", "rewrite the execution profile after each counted run (false: "
                                                "once, when the engine is closed or destroyed)"),
    "autoReport.executionProfileProgramRunCount": _spec("2", "runs of each program the execution profile counts",
                                                        check=_non_negative_int),
    # Debugging (Poplar's keys).
    "debug.allowOutOfMemory": _flag("false", "build the engine even when tiles are over memory"),
    "debug.variableLiveness": _flag("true", "variables that are not always live share tile memory where their live "
                                            "ranges do not overlap (false: each has its own, for comparisons)"),
    "debug.retainDebugInformation": _flag("true"),
    "debug.instrument": _flag("false"),
    "debug.instrumentCompute": _flag("false"),
    "debug.instrumentExternalExchange": _flag("false"),
    "debug.instrumentControlFlow": _flag("false"),
    "debug.computeInstrumentationLevel": _spec("tile", choices=("vertex", "tile", "ipu", "device")),
    "debug.outputAllSymbols": _flag("false"),
    "debug.floatPointOpException": _flag("false"),
    "debug.nanOverflowMode": _flag("false"),
    "debug.runtimeVerify": _flag("false"),
    "debug.trace": _flag("false"),
    "debug.workerStackSizeInBytes": _spec("0", check=_non_negative_int),
    "debug.supervisorStackSizeInBytes": _spec("0", check=_non_negative_int),
    # Target behaviour (Poplar's keys).
    "target.deterministicWorkers": _spec("true", choices=("true", "false", "portable")),
    "target.syncReplicasIndependently": _flag("false"),
    "target.hostSyncTimeout": OptionSpec("300", None, _non_negative_int, refused=(
        "popsim has no device for the host to wait on, so Poplar's host-sync timeout cannot apply; to stop a run "
        "that takes too long, set popsim.runTimeout (seconds of wall-clock time)")),
    "target.extendedMemory": _flag("false"),
    "target.saveArchive": _spec(""),
    # Compiler optimisation and exchange (Poplar's keys; accepted, recorded in the report).
    "opt.internalExchangeOptimisationTarget": _spec("cycles", choices=("balanced", "cycles", "memory")),
    "opt.enableMultiAccessCopies": _flag("true"),
    "opt.useAutoloader": _flag("true"),
    "opt.enableInlining": _flag("true"),
    "opt.maxComputeSetsPerLoweredCopy": _spec("6", check=_non_negative_int),
    "opt.maxCompilationThreads": _spec("0", check=_non_negative_int),
    "exchange.streamBufferOverlap": _spec("hostRearrangeOnly", choices=("none", "hostRearrangeOnly", "any")),
    "exchange.enablePrefetch": _flag("true"),
    "exchange.multicastPolicy": _spec("balanced"),
    "profiler.format": _spec("v3"),
    "profiler.programs.filter": _spec(""),
    "profiler.blocks.filter": _spec(""),
    "profiler.includeCycleEstimates": _flag("true"),
    "profiler.includeFlopEstimates": _flag("false"),
    # popsim's own.
    "popsim.numThreads": OptionSpec("0", None, _non_negative_int,
                                    "threads for the engine (0: POPSIM_NUM_THREADS or every core); more threads "
                                    "than host cores only add overhead", maximum=config.MAX_THREADS),
    "popsim.cacheDir": _spec("", "directory for compiled codelets and cached executables"),
    "popsim.codeletMode": _spec("compiled", "compiled or interpreted Python vertices",
                                choices=("compiled", "interpreted")),
    "popsim.traceLength": _spec("10000",
                                "rows recorded in the execution trace (one per IPU a step runs on, "
                                "from the last reset)",
                                check=_non_negative_int),
    "popsim.runTimeout": OptionSpec("0", None, _non_negative_number,
                                    "seconds a run may take on the host before it is stopped with an "
                                    "ApplicationRuntimeError (0: no limit)", wanted="a non-negative number of seconds"),
    "popsim.checkRaces": _flag("false", "a vertex reading what another vertex of its compute set writes is an "
                                        "error (POPSIM_CHECK_RACES overrides; the test suite turns it on)"),
}


def _as_option_string(key: str, value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise InvalidOptionError(f"option '{key}': values must be strings (or bool/int), found "
                             f"{type(value).__name__} {value!r}")


# Keys that are not Poplar's but look like one: the error names the key to use.
NOT_POPLAR_KEYS = {
    "autoReport.outputExecutionReport": "autoReport.outputExecutionProfile",
    "autoReport.outputGraphReport": "autoReport.outputGraphProfile",
}


class EngineOptions(Mapping[str, str]):
    """Validated engine options with defaults; read like a dict of strings."""

    def __init__(self, options: Optional[Mapping[str, object]] = None, use_environment: bool = True):
        if options is not None and not isinstance(options, Mapping):
            raise InvalidOptionError(f"engine options must be a dict of option name -> value, found "
                                     f"{type(options).__name__}")
        self._set: Dict[str, str] = {}
        self._add(options or {}, "")
        if use_environment:
            for variable, overrides in config.engine_options_overrides():
                self._add(overrides, f" (from {variable})")

    def _add(self, options: Mapping[str, object], source: str) -> None:
        for key, value in options.items():
            if key in NOT_POPLAR_KEYS:
                raise InvalidOptionError(f"Unrecognised option '{key}'{source}: Poplar has no such option; use "
                                         f"'{NOT_POPLAR_KEYS[key]}'")
            if key not in OPTIONS:
                raise InvalidOptionError(f"Unrecognised option '{key}'{source}: {did_you_mean(key, OPTIONS)}")
            text = _as_option_string(key, value)
            spec = OPTIONS[key]
            if spec.refused:
                raise InvalidOptionError(f"option '{key}'{source}: {spec.refused}")
            if spec.choices is not None and text not in spec.choices:
                raise InvalidOptionError(f"option '{key}'{source} must be one of {', '.join(spec.choices)}; "
                                         f"found {text!r}")
            if spec.maximum is not None and not (spec.check(text) and int(text) <= spec.maximum):
                raise InvalidOptionError(f"option '{key}'{source} must be an integer in 0..{spec.maximum}; found "
                                         f"{text!r} ({spec.help})")
            if spec.check is not None and not spec.check(text):
                raise InvalidOptionError(f"option '{key}'{source} must be {spec.wanted}; found {text!r}")
            self._set[key] = text

    def __getitem__(self, key: str) -> str:
        if key in self._set:
            return self._set[key]
        return OPTIONS[key].default

    def __iter__(self):
        return iter(OPTIONS)

    def __len__(self) -> int:
        return len(OPTIONS)

    def flag(self, key: str) -> bool:
        return self[key] == "true"

    @property
    def explicit(self) -> Dict[str, str]:
        """Only the options that were set (by the program or the environment)."""
        return dict(self._set)
