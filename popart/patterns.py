"""popart.Patterns and popart.PatternsLevel. PopART's patterns rewrite its IR (fusing,
inplacing, splitting ops) without changing what a model computes; popsim.popart lowers each
ONNX node to PopLibs ops directly (the one fusion it makes, Softmax with Nll's gradient, is
always on), so a session accepts a Patterns object and its choice changes nothing. Anything
else given as ``patterns`` is an error."""
import enum

from .errors import popart_exception


class PatternsLevel(enum.Enum):
    NoPatterns, Minimal, Default, All = range(4)


class Patterns:
    """``Patterns()``, ``Patterns(PatternsLevel.X)`` or ``Patterns(["PreUniRepl", ...])``."""

    def __init__(self, levelOrPatterns=PatternsLevel.Default, enableRuntimeAsserts=None):  # noqa: N803
        self._enabled, self.level = {}, PatternsLevel.Default
        if isinstance(levelOrPatterns, PatternsLevel):
            self.level = levelOrPatterns
        elif isinstance(levelOrPatterns, (list, tuple)) and all(isinstance(p, str) for p in levelOrPatterns):
            self.level = None
            self._enabled = {p: True for p in levelOrPatterns}
        else:
            raise popart_exception(f"Patterns: expected a popart.PatternsLevel or a list of pattern names, found "
                                   f"{levelOrPatterns!r}")

    def enablePattern(self, pattern, enabled):  # noqa: N802 - PopART's name
        self._enabled[str(pattern)] = bool(enabled)
        return self

    def isPatternEnabled(self, pattern) -> bool:  # noqa: N802
        if str(pattern) in self._enabled:
            return self._enabled[str(pattern)]
        return self.level not in (None, PatternsLevel.NoPatterns)

    def __setattr__(self, key, value):   # patterns.InPlace = False, as PopART's properties
        if key.startswith("_") or key == "level":
            object.__setattr__(self, key, value)
        else:
            self._enabled[key] = bool(value)

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        return self.isPatternEnabled(key)


def check_patterns(patterns, what: str) -> None:
    if patterns is not None and not isinstance(patterns, Patterns):
        raise popart_exception(f"{what}: patterns must be a popart.Patterns (e.g. popart.Patterns("
                               f"popart.PatternsLevel.Default)), found {type(patterns).__name__}")
