"""popsim's exceptions: Poplar's error names in CamelCase, all under PopsimError.

Messages name the object (tensor, vertex type, field, tile), what was expected and what
was found, and how to fix it.
"""
from __future__ import annotations

import builtins
import difflib
from typing import Any, Iterable, Optional

__all__ = [
    "PopsimError", "GraphConnectionError", "GraphCycleError", "InvalidTileMappingError",
    "GraphMemoryAllocationError", "UnknownVertexTypeError", "UnknownFieldError",
    "StreamConnectionError", "InvalidOptionError", "ControlProgramError", "TensorCreationError",
    "IndexError", "ApplicationRuntimeError", "CodeletSyntaxError", "CodeletCompileError",
    "HandleError", "UnknownHandleError", "DuplicateHandleError", "EngineStateError", "TensorIOError",
    "InvalidMachineModelError", "UnknownAttributeError", "PeerProcessError",
]


class PopsimError(Exception):
    """Base class of every error popsim raises."""


class GraphConnectionError(PopsimError):
    """A vertex field or program connected to something it cannot take."""


class GraphCycleError(PopsimError):
    """Two writers of one element in one compute set."""


class InvalidTileMappingError(PopsimError):
    """Tensor elements unmapped, or mapped to a tile the target does not have."""


class GraphMemoryAllocationError(PopsimError):
    """The graph does not fit in tile memory. Raised by compiling (``compile_graph``,
    ``Engine``), it carries ``report``: the Report of the compiled graph (memory of every
    tile, nothing run), made without allocating the tile memory that did not fit, and
    ``profile_path``: where autoReport saved it ('' when it did not), as Poplar's
    graph_memory_allocation_error carries its profile's path."""

    report: Any = None  # the popsim.Report (a higher layer's type)
    profile_path = ""
    executable: Any  # the popsim.Executable compiled, set when compiling raises it (a higher layer's type)


class UnknownVertexTypeError(PopsimError):
    """No codelet registered under that vertex type name."""


class UnknownFieldError(PopsimError):
    """The vertex type has no such field."""


class StreamConnectionError(PopsimError):
    """A data stream is missing, unconnected, or connected to the wrong buffer."""


class InvalidOptionError(PopsimError):
    """An unknown option key or a bad option value."""


class ControlProgramError(PopsimError):
    """A control program built from arguments it cannot take."""


class TensorCreationError(PopsimError):
    """A tensor or view that cannot be created as asked."""


class IndexError(PopsimError, builtins.IndexError):  # noqa: A001 - Poplar's name, also a builtin IndexError
    """An index or range outside a tensor's shape."""


class ApplicationRuntimeError(PopsimError):
    """A program failed while running: Abort, AbortOnCondition, a vertex returning False."""


class PeerProcessError(ApplicationRuntimeError):
    """A run failed because another process of the job (popsim.dist) failed in it."""


class CodeletSyntaxError(PopsimError, SyntaxError):
    """A vertex codelet uses a construct popsim cannot compile."""


class CodeletCompileError(PopsimError):
    """The host compiler rejected a codelet."""

    compiler_output: str  # what the compiler printed, when one ran (set by codelet/compiler.py)


class HandleError(PopsimError):
    """A problem with a stream or host read/write handle."""


class UnknownHandleError(HandleError, KeyError):
    """No stream or host read/write registered under that handle."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DuplicateHandleError(HandleError):
    """A handle already registered in the graph."""


class TypeError(PopsimError, builtins.TypeError):  # noqa: A001 - Poplar's type_error, also a builtin TypeError
    """An argument of the wrong kind: a string where a tile number goes, a list where a
    program goes, something that is not an element type. Also a TypeError, so code that
    catches Python's TypeError catches it too. Not in ``__all__``: ``from popsim import *``
    must not hide the builtin TypeError (write ``popsim.TypeError``)."""


class TensorIOError(PopsimError, ValueError):
    """A host array of the wrong shape or dtype for a tensor read or write."""


class EngineStateError(PopsimError):
    """The engine cannot do that in its current state (not loaded, out of memory...)."""


class InvalidMachineModelError(PopsimError):
    """An IPUModel or Target field set to a value the model cannot take (Poplar's
    invalid_machine_model)."""


class UnknownAttributeError(PopsimError, AttributeError):
    """No such attribute: a misspelled field, or a Poplar camelCase name whose popsim
    spelling is snake_case. Also an AttributeError, so hasattr() and getattr(x, n, default)
    behave as usual."""


def closest(name: str, choices: Iterable[str]) -> Optional[str]:
    """The most similar known name, for "did you mean" hints (none for a name that is not a
    string: the message names what was found)."""
    if not isinstance(name, str):
        return None
    matches = difflib.get_close_matches(name, [c for c in choices if isinstance(c, str)], n=1, cutoff=0.5)
    return matches[0] if matches else None


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """A hint sentence naming the closest known name, or listing a few known ones."""
    choices = list(choices)
    best = closest(name, choices)
    if best is not None:
        return f"did you mean '{best}'?"
    if not choices:
        return "none are registered"
    shown = ", ".join(repr(c) for c in sorted(choices)[:8])
    more = "" if len(choices) <= 8 else f" (and {len(choices) - 8} more)"
    return f"known: {shown}{more}"
