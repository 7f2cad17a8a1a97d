"""CodeletSyntaxError for everything outside the supported subset (raised by the type
check, popsim.codelet.typecheck, and the translator): the message, the fix, the file,
line and column, the source line and a caret."""
from pathlib import Path

import pytest

import popsim
from popsim.codelet.python_compile import vertex_types_from_classes

from vertex_harness import load_vertex


SYNTAX_ERRORS = [
    ("try:\n    x = 1\nexcept Exception:\n    pass", 0, "'try' is not supported in vertex codelets", "return False"),
    ("self.out[0] = [x * 2 for x in self.in_]", 0, "comprehensions are not supported", "for loop"),
    ("self.in_[0] = 1.0", 0, "field 'in' is an Input and cannot be written", "InOut"),
    ("if self.k > 0:\n    y = 1.0\nself.out[0] = y", 2, "local variable 'y' may be read before it is assigned",
     "on every path"),
    ("self.out[0] = zz + 1", 0, "name 'zz' is not defined", "module level"),
    ("self.out[0] = sorted(3)", 0, "calling 'sorted' is not supported in vertex code", "math.*"),
    ("for x in 5:\n    pass", 0, "for-loops in vertex code cannot run over '5'", "range"),
    ("for a in zip(self.in_, self.in_):\n    pass", 0, "for-loops cannot run over zip(...)", "enumerate"),
    ("x = self.out[0]", 0, "field 'out' is an Output: reading it gives undefined values", "InOut"),
    ("self.out[0] = self.in_[1.5]", 0, "an index must be an integer, found a float", "int(...)"),
    ("self.out[0] = self.in_[-1]", 0, "negative indices do not wrap around", "len(self.a) - 1"),
    ("self.out[0] = self.in_[1:3]", 0, "slicing is not supported", "loop"),
    ("while self.k > 0:\n    break\nelse:\n    pass", 3, "'else' on loops is not supported", "flag"),
    ("with open('f') as f:\n    pass", 0, "'with' is not supported", None),
    ("f = lambda v: v", 0, "lambda is not supported", None),
    ("import os", 0, "'import' is not supported inside compute", "top of the file"),
    ("assert self.k > 0", 0, "'assert' is not supported", "return False"),
    ("raise ValueError('x')", 0, "'raise' is not supported", "return False"),
    ("self.out[0] = self.nope", 0, "has no field 'nope'", "declare it"),
    ("self.k = 2.0", 0, "state field 'k' is read-only", "InOut"),
    ("r = self.in_\nr = self.out", 1, "a local keeps one type for its whole life", "different name"),
    ("x = self.in_.sum()", 0, "has no methods in vertex code", "loop"),
    ("if self.k:\n    pass\nelif self.k > 1:\n    x = 1\nx += math", 4, "'math' is a module", None),
    ("x = 'abc'", 0, "strings can only be printed", "print"),
    ("x = 1.0 in self.in_", 0, "'in' is not supported", "loop"),
    ("x = self.k & 1", 0, "bitwise operator & needs integers or bools", "int(...)"),
    ("for i in range(self.k):\n    pass", 0, "a range() argument must be an integer", "int(...)"),
    ("print(1, file=None)", 0, "print(file=...) is not supported", None),
    ("global LIMIT", 0, "'global' is not supported", "module-level constants"),
    ("x = [1, 2]", 0, "lists, tuples, sets and dicts cannot be created", "scalar locals"),
    ("a, b = 1", 0, "unpacking is only supported from a tuple", None),
    ("for i in range(0, 4, 0):\n    pass", 0, "range() step must not be zero", None),
    ("x = LIMIT", 0, "'LIMIT' is a str: only numbers", None),
    ("print(f'{self.k:>5}')", 0, "format spec ':>5' is not supported", "precision"),
    ("x = self", 0, "'self' can only be used to reach fields", None),
    ("x = range(3)", 0, "range() can only be used in a for statement", "for i in range"),
    ("x = print(1)", 0, "print() is a statement in vertex code", None),
    ("def helper():\n    pass", 0, "functions cannot be defined inside compute", "inline"),
    ("x = self.k @ self.k", 0, "matrix product operator @ is not supported", "loops"),
    ("x = self.k is None", 0, "'is' is not supported", "=="),
    ("self.out = 1.0", 0, "field 'out' is a vector edge: assign its elements", "self.out[i]"),
    ("x = (y := 2)", 0, "assignment expressions (:=) are not supported", "separate line"),
    ("x: str = 'a'", 0, "'str' is not a type for a local", "float, int, bool"),
    ("x = len(self.k)", 0, "field 'k' is a scalar: it has no len()", None),
    ("for a, b in self.in_:\n    pass", 0, "the loop variable must be a name", None),
    ("x = self.in_ + 1", 0, "vector field 'in' is not a number", "index it"),
    ("x = math.gamma(self.k)", 0, "calling 'math.gamma' is not supported", "math.*"),
    ("x = self.k\nx = self.in_", 1, "local 'x' holds a float (32-bit) number", "different name"),
    ("x = 1180591620717411303424", 0, "does not fit in 64 bits", None),
    ("self.out[0, 1] = 1.0", 0, "multi-dimensional indexing", "a[i][j]"),
    ("x = self.num_workers", 0, "num_workers is a method", "self.num_workers()"),
    ("x = round(self.k, 2)", 0, "round() with a number of digits is not supported", None),
    ("math.exp(1.0)", 0, "this expression's value is not used", None),
    ("del x", 0, "'del' is not supported", None),
    ("x = self.in_.size", 0, "'self.in_' has no attribute 'size' in vertex code", "len(...)"),
    ("_p_x = 1", 0, "names starting with _p_ are reserved", "rename"),
]


@pytest.mark.parametrize("body, line, message, fix", SYNTAX_ERRORS, ids=[m for _, _, m, _ in SYNTAX_ERRORS])
def test_codelet_syntax_errors(tmp_path, body, line, message, fix):
    cls, first = load_vertex(tmp_path, body)
    with pytest.raises(popsim.CodeletSyntaxError) as e:
        vertex_types_from_classes([cls])
    err = e.value
    assert isinstance(err, SyntaxError)
    assert message in str(err)
    if fix:
        assert "fix:" in str(err) and fix in str(err).split("fix:")[1]
    assert err.lineno == first + line
    assert err.filename.endswith(".py") and Path(err.filename).exists()
    assert err.text is not None and err.offset >= 9
    assert err.text.strip() in str(err) and "^" in str(err)
