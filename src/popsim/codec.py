"""Dataclasses to (JSON-able header, named numpy arrays) and back, driven by their fields.

Each field's annotation decides how it is stored: ``np.ndarray`` fields become named
arrays (their name is the field's path, e.g. ``programs.steps.3.cost.vector``) and
everything else becomes JSON: numbers, strings, bools, enums (their value), popsim
element types (their name), lists, tuples, str-keyed dicts, optionals and nested
dataclasses. Adding a field to a saved dataclass is therefore one edit: the field.
A field whose metadata is ``NOT_SAVED`` is process-local: it is not written, and
reads back as its default (or None).

Decoding checks every value against its annotation and raises CodecError naming the
field's path, what was expected and what was found: a malformed file is an error,
never a half-built object.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import numbers
import typing
from typing import Callable, Dict, Mapping, Optional, Tuple

import numpy as np

from .types import Type, as_type

__all__ = ["NOT_SAVED", "CodecError", "Hooks", "encode", "decode"]

#: Field metadata of a process-local field: ``field(default=None, metadata=NOT_SAVED)``.
NOT_SAVED = {"saved": False}

#: (dataclass, field name) -> (encode(value, path, arrays) -> JSON, decode(JSON, path, arrays) -> value):
#: for the few fields that need more than their annotation (e.g. embedded libraries). The side a
#: caller does not use may be None (encode's hooks need no decoder).
Hooks = Mapping[Tuple[type, str], Tuple[Optional[Callable], Optional[Callable]]]

_NONE = type(None)


class CodecError(ValueError):
    """A value that does not match its field's annotation."""


@functools.lru_cache(maxsize=None)
def _saved_fields(cls):
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls) if f.metadata.get("saved", True)]


def encode(obj, hooks: Optional[Hooks] = None) -> Tuple[dict, Dict[str, np.ndarray]]:
    """``obj`` (a dataclass instance) as (JSON-able dict, {array name: array})."""
    arrays: Dict[str, np.ndarray] = {}
    return _encode(obj, type(obj), "", arrays, hooks or {}), arrays


def decode(cls, header, arrays: Mapping[str, np.ndarray], hooks: Optional[Hooks] = None):
    """The ``cls`` instance ``encode`` described with ``header`` and ``arrays``."""
    return _decode(header, cls, "", arrays, hooks or {})


def _join(path: str, name) -> str:
    return f"{path}.{name}" if path else str(name)


def _encode(value, hint, path: str, arrays: Dict[str, np.ndarray], hooks: Hooks):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if value is None:
        return None
    if origin is typing.Union:  # Optional[X]
        return _encode(value, next(a for a in args if a is not _NONE), path, arrays, hooks)
    if hint is np.ndarray:
        arrays[path] = np.ascontiguousarray(value)
        return path
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        out = {}
        for f, fhint in _saved_fields(hint):
            name = _join(path, f.name)
            hook = hooks.get((hint, f.name))
            v = getattr(value, f.name)
            if hook is None:
                out[f.name] = _encode(v, fhint, name, arrays, hooks)
            else:
                assert hook[0] is not None, f"{name}: its codec hook has no encoder"
                out[f.name] = hook[0](v, name, arrays)
        return out
    if origin in (list, tuple):
        items = args[:1] * len(value) if origin is list or args[-1:] == (Ellipsis,) else args
        return [_encode(v, h, _join(path, i), arrays, hooks) for i, (v, h) in enumerate(zip(value, items))]
    if origin is dict:
        return {str(k): _encode(v, args[1], _join(path, k), arrays, hooks) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return value.value
    if hint is Type:
        return value.name
    if hint is bool:
        return bool(value)
    if hint is int:
        return int(value)
    if hint is float:
        return float(value)
    if hint in (str, dict):
        return value
    raise CodecError(f"{path}: cannot save a field annotated {hint!r}")


def _wrong(path: str, expected: str, found) -> CodecError:
    text = repr(found)
    return CodecError(f"{path or 'the header'}: expected {expected}, found {text[:60]}")


def _decode(value, hint, path: str, arrays: Mapping[str, np.ndarray], hooks: Hooks):
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union:
        if value is None and _NONE in args:
            return None
        return _decode(value, next(a for a in args if a is not _NONE), path, arrays, hooks)
    if hint is np.ndarray:
        if value is None:
            return None
        if not isinstance(value, str) or not isinstance(arrays.get(value), np.ndarray):
            raise _wrong(path, "the name of an array stored in the file", value)
        return arrays[value]
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise _wrong(path, f"a {hint.__name__} object", value)
        kwargs = {}
        for f, fhint in _saved_fields(hint):
            name = _join(path, f.name)
            if f.name not in value:
                raise CodecError(f"{name}: missing")
            hook = hooks.get((hint, f.name))
            if hook is None:
                kwargs[f.name] = _decode(value[f.name], fhint, name, arrays, hooks)
            else:
                assert hook[1] is not None, f"{name}: its codec hook has no decoder"
                kwargs[f.name] = hook[1](value[f.name], name, arrays)
        for f in dataclasses.fields(hint):
            if not f.metadata.get("saved", True) and f.default is dataclasses.MISSING and \
                    f.default_factory is dataclasses.MISSING:
                kwargs[f.name] = None
        try:
            return hint(**kwargs)
        except (TypeError, ValueError) as e:
            raise CodecError(f"{path or hint.__name__}: {e}") from None
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise _wrong(path, "a list", value)
        if origin is tuple and args[-1:] != (Ellipsis,):
            if len(value) != len(args):
                raise _wrong(path, f"a list of {len(args)} items", value)
            items = args
        else:
            items = args[:1] * len(value)
        out = [_decode(v, h, _join(path, i), arrays, hooks) for i, (v, h) in enumerate(zip(value, items))]
        return out if origin is list else tuple(out)
    if origin is dict:
        if not isinstance(value, dict):
            raise _wrong(path, "an object", value)
        return {k: _decode(v, args[1], _join(path, k), arrays, hooks) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            raise _wrong(path, f"one of {[m.value for m in hint]}", value) from None
    if hint is Type:
        try:
            return as_type(value) if isinstance(value, str) else as_type(None)
        except TypeError:
            raise _wrong(path, "an element type name", value) from None
    if hint is bool:
        if not isinstance(value, bool):
            raise _wrong(path, "true or false", value)
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _wrong(path, "an integer", value)
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise _wrong(path, "a number", value)
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise _wrong(path, "a string", value)
        return value
    if hint is dict:
        if not isinstance(value, dict):
            raise _wrong(path, "an object", value)
        return value
    raise CodecError(f"{path}: cannot read a field annotated {hint!r}")
