"""A fingerprint of everything a Python callable's result depends on, for cache keys.

The executable cache must see a change to a perf estimator (graph.register_perf_
estimator) even when the change is in a helper it calls, a default argument, a value
it closed over, or a module-level table it reads. So the fingerprint covers what the
callable *reaches*, not only its own bytecode:

- a function: its code (bytecode, constants, names, nested functions' code), its
  defaults, keyword defaults and closure values, and every global its code names
  (``helper``, ``TABLE``), followed the same way; for a global module, the module
  attributes its code names (``mymodule.helper``);
- a bound method: its function and its object; a ``functools.partial``: its function
  and arguments; a class: its bases and the attributes it defines; an object: its type
  and its attributes; containers and numpy arrays: their contents.

Installed code (the standard library and anything under site-packages, plus numpy and
popsim, whose own code the cache key covers separately) is named by module, name and
package version rather than read: it changes only with its version (an installed
function's closure and defaults are still followed: a factory's products differ). Everything else is
the user's code and is read. The walk uses a queue and numbers each object on first
sight, so cycles (a recursive helper) and deep call chains need no recursion.
"""
from __future__ import annotations

import enum
import functools
import hashlib
import sys
import sysconfig
import types
from collections import deque
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

__all__ = ["code_fingerprint"]

_PLAIN = (int, float, complex, str, bytes, bool, type(None), type(Ellipsis), range, slice)
_SKIP_CLASS_ATTRS = {"__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "__slots__"}


def _installed_roots() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(str(Path(r).resolve()) for r in roots if r)


_ROOTS = _installed_roots()
_ALWAYS_INSTALLED = {"builtins", "numpy", "popsim"}


@functools.lru_cache(maxsize=None)
def _is_installed(module: str) -> bool:
    top = module.split(".")[0]
    if top in _ALWAYS_INSTALLED or top in getattr(sys, "stdlib_module_names", ()):
        return True
    m = sys.modules.get(module)
    path = getattr(m, "__file__", None)
    if not path:  # built into the interpreter, or made in memory (exec): the user's
        return m is not None and module in sys.builtin_module_names
    real = str(Path(path).resolve())
    return any(real.startswith(r + "/") or real.startswith(r + "\\") for r in _ROOTS) or "site-packages" in real


def _version(module: str) -> str:
    top = sys.modules.get(module.split(".")[0])
    return str(getattr(top, "__version__", ""))


def _code_names(code: types.CodeType) -> List[str]:
    """Global and attribute names used by ``code`` and the code nested in it."""
    names: List[str] = []
    stack = [code]
    while stack:
        c = stack.pop()
        names.extend(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return sorted(set(names))


def _code_text(code: types.CodeType) -> str:
    parts = []
    stack = [code]
    while stack:
        c = stack.pop()
        consts = [("<code>" if isinstance(k, types.CodeType) else repr(k)) for k in c.co_consts]
        parts.append(repr((c.co_name, c.co_code.hex(), consts, c.co_names, c.co_argcount, c.co_kwonlyargcount,
                           c.co_flags, c.co_varnames, c.co_freevars)))
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return "\n".join(parts)


class _Walk:
    def __init__(self):
        self.numbers: Dict[int, int] = {}
        self.keep: List[object] = []  # keeps every numbered object alive, so ids stay unique
        self.queue: deque = deque()

    def ref(self, x) -> str:
        """A token for ``x``: plain values inline, other objects by number (queued once)."""
        if isinstance(x, _PLAIN) and not isinstance(x, enum.Enum):
            return repr(x)
        n = self.numbers.get(id(x))
        if n is None:
            n = self.numbers[id(x)] = len(self.keep)
            self.keep.append(x)
            self.queue.append(x)
        return f"#{n}"

    def describe(self, x) -> str:
        if isinstance(x, enum.Enum):
            return repr(("enum", type(x).__module__, type(x).__qualname__, x.name))
        if isinstance(x, types.FunctionType):
            return self._function(x)
        if isinstance(x, types.MethodType):
            return repr(("method", self.ref(x.__func__), self.ref(x.__self__)))
        if isinstance(x, functools.partial):
            return repr(("partial", self.ref(x.func), [self.ref(a) for a in x.args],
                         sorted((k, self.ref(v)) for k, v in x.keywords.items())))
        if isinstance(x, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            owner = getattr(x, "__self__", None)
            owner_ref = "" if owner is None or isinstance(owner, types.ModuleType) else self.ref(owner)
            return repr(("builtin", getattr(x, "__module__", None), x.__qualname__, owner_ref))
        if isinstance(x, types.ModuleType):
            return repr(("module", x.__name__, _version(x.__name__)))
        if isinstance(x, type):
            return self._class(x)
        if isinstance(x, np.ndarray):
            data = np.ascontiguousarray(x)
            return repr(("array", data.dtype.str, data.shape, hashlib.sha256(data.tobytes()).hexdigest()))
        if isinstance(x, (np.generic, np.dtype)):
            return repr(("numpy", repr(x)))
        if isinstance(x, (tuple, list)):
            return repr((type(x).__name__, [self.ref(e) for e in x]))
        if isinstance(x, (set, frozenset)):
            return repr((type(x).__name__, sorted(self.ref(e) for e in x)))
        if isinstance(x, dict):
            return repr(("dict", [(self.ref(k), self.ref(v)) for k, v in x.items()]))
        return self._object(x)

    def _function(self, f: types.FunctionType) -> str:
        module = f.__module__ or ""
        closure = [self.ref(c.cell_contents) if _filled(c) else "<empty cell>" for c in (f.__closure__ or ())]
        defaults = [self.ref(d) for d in (f.__defaults__ or ())]
        kwdefaults = sorted((k, self.ref(v)) for k, v in (f.__kwdefaults__ or {}).items())
        if _is_installed(module):  # its code comes with its version; what it was made with may differ
            return repr(("installed function", module, f.__qualname__, _version(module), defaults, kwdefaults,
                         closure))
        code = f.__code__
        g = f.__globals__
        names = _code_names(code)
        reached = []
        for name in names:
            if name not in g:
                continue
            value = g[name]
            reached.append((name, self.ref(value)))
            if isinstance(value, types.ModuleType) and not _is_installed(value.__name__):
                # ``module.helper``: the attributes of a user module the code names
                reached.extend((f"{name}.{a}", self.ref(getattr(value, a))) for a in names if hasattr(value, a))
        return repr(("function", module, f.__qualname__, _code_text(code), defaults, kwdefaults, closure, reached))

    def _class(self, c: type) -> str:
        if _is_installed(c.__module__):
            return repr(("installed class", c.__module__, c.__qualname__, _version(c.__module__)))
        attrs = sorted((k, self.ref(v)) for k, v in vars(c).items() if k not in _SKIP_CLASS_ATTRS)
        return repr(("class", c.__module__, c.__qualname__, [self.ref(b) for b in c.__bases__], attrs))

    def _object(self, x) -> str:
        if type(x).__module__.split(".")[0] == "popsim":
            # popsim's own objects (a Tensor, a Graph an estimator closed over): by what they
            # are, not by their whole state; the graph digest covers the graph's contents
            text = repr(x)
            return repr(("popsim object", type(x).__qualname__, "" if " at 0x" in text else text))
        state = getattr(x, "__dict__", None)
        slots = {}
        for klass in type(x).__mro__:
            for name in getattr(klass, "__slots__", ()):
                if hasattr(x, name):
                    slots[name] = getattr(x, name)
        if state is None and not slots:
            text = repr(x)
            if " at 0x" in text:  # an address says nothing about behaviour, and differs per process
                text = ""
            return repr(("object", self.ref(type(x)), text))
        return repr(("object", self.ref(type(x)), self.ref(dict(state or {})), self.ref(slots)))


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def code_fingerprint(obj) -> str:
    """A hex digest of ``obj`` and everything it reaches (see the module docstring)."""
    walk = _Walk()
    h = hashlib.sha256()
    h.update(walk.ref(obj).encode())
    while walk.queue:
        x = walk.queue.popleft()
        h.update(walk.describe(x).encode())
        h.update(b"\n")
    return h.hexdigest()
