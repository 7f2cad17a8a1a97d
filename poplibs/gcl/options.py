"""GCL's option flags: the ``options`` argument of every collective and the
environment variable GCL_OPTIONS (a JSON object of the same keys). As with
POPLAR_ENGINE_OPTIONS, what the environment sets wins over what the program passes."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import popsim

__all__ = ["METHODS", "CollectiveOptions", "parse_options"]

#: the collective methods GCL's "method" option names
METHODS = ("auto", "clockwise_ring", "anticlockwise_ring", "bidirectional_ring_pair", "meet_in_middle_ring",
           "broadcast")
_DEFAULT_MAX_BROADCAST = 2048  # bytes x group size under which auto all-reduces by broadcast (GCL's default)


@dataclass(frozen=True)
class CollectiveOptions:
    method: str = "auto"
    max_broadcast_size: int = _DEFAULT_MAX_BROADCAST


def parse_options(options, what: str) -> CollectiveOptions:
    """The options of one collective: ``options`` (a dict of str to str or number, or
    None) overridden by GCL_OPTIONS."""
    merged = {}
    for source, values in (("options", options), ("GCL_OPTIONS", _environment(what))):
        if values is None:
            continue
        if not isinstance(values, dict):
            raise popsim.InvalidOptionError(f"{what}: {source} must be a dict of option name to value, found "
                                     f"{type(values).__name__}")
        for key, value in values.items():
            merged[key] = (source, value)
    method, max_broadcast = "auto", _DEFAULT_MAX_BROADCAST
    for key, (source, value) in merged.items():
        if key == "method":
            if str(value) not in METHODS:
                raise popsim.InvalidOptionError(f"{what}: {source} sets method to {value!r}; GCL's methods are "
                                         f"{', '.join(METHODS)}")
            method = str(value)
        elif key == "syncful.maxBroadcastSize":
            whole = (isinstance(value, int) and not isinstance(value, bool)) or \
                (isinstance(value, str) and value.isdigit())
            max_broadcast = int(value) if whole else -1
            if max_broadcast < 0:
                raise popsim.InvalidOptionError(f"{what}: {source} sets syncful.maxBroadcastSize to {value!r}; "
                                                "expected a number of bytes (a non-negative integer)")
        else:
            raise popsim.InvalidOptionError(f"{what}: unknown GCL option {key!r} in {source}; popsim's GCL takes "
                                     "'method' and 'syncful.maxBroadcastSize'")
    return CollectiveOptions(method, max_broadcast)


def _environment(what: str):
    text = os.environ.get("GCL_OPTIONS")
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise popsim.InvalidOptionError(f"{what}: the environment variable GCL_OPTIONS is not valid JSON ({e}); set it "
                                 "to an object such as '{\"method\": \"clockwise_ring\"}'") from None
