"""popsim.errors: every error class is exported from popsim and rooted in PopsimError.

Bad inputs raise clear errors. Every error must be the right PopsimError subclass
(re-exported from popsim) and its message must name the object (tensor, stream handle,
option key, tile...), say what was expected and what was found, and how to fix it. After
a failed run the engine must stay usable. The checks of each module's errors live beside
that module's other tests (tests/test_graph*.py, test_tensor_errors.py, test_program_errors.py,
test_options.py, test_engine*.py, ...).
"""
import builtins

import popsim


def test_error_classes_are_exported_and_rooted():
    names = ["GraphConnectionError", "GraphCycleError", "InvalidTileMappingError", "GraphMemoryAllocationError",
             "UnknownVertexTypeError", "UnknownFieldError", "StreamConnectionError", "InvalidOptionError",
             "ControlProgramError", "TensorCreationError", "IndexError", "ApplicationRuntimeError",
             "CodeletSyntaxError", "CodeletCompileError", "UnknownHandleError", "EngineStateError",
             "TensorIOError"]
    for name in names:
        cls = getattr(popsim, name)
        assert cls is getattr(popsim.errors, name)
        assert issubclass(cls, popsim.PopsimError), name
    assert issubclass(popsim.IndexError, builtins.IndexError)
    assert issubclass(popsim.UnknownHandleError, KeyError)
    assert issubclass(popsim.TensorIOError, ValueError)
    assert popsim.IndexError is not builtins.IndexError


def test_type_error_is_a_popsim_error_and_a_type_error():
    """An argument of the wrong kind: catchable as popsim's (every error of the library
    is a PopsimError) and as Python's TypeError; a star import keeps the builtin."""
    assert issubclass(popsim.TypeError, popsim.PopsimError)
    assert issubclass(popsim.TypeError, builtins.TypeError) and popsim.TypeError is not builtins.TypeError
    names = {}
    exec("from popsim import *", names)  # noqa: S102 - a star import, as a user writes one
    assert "TypeError" not in names and "TypeError" not in popsim.__all__


def test_did_you_mean_of_a_name_that_is_not_a_string():
    """A handle or option key passed as a number is named in the message, not a crash in difflib."""
    assert popsim.errors.closest(3.5, ["a", "b"]) is None
    assert popsim.errors.did_you_mean(None, ["abc", "abd"]) == "known: 'abc', 'abd'"
