"""CodeletCompileError messages (popsim.codelet.diagnostics, used by the C++ front end
and the compiler driver): the error that matters, with its file, line and source line,
comes first; the compiler's full output follows."""
from pathlib import Path

import pytest

import popsim
from popsim.codelet import compiler, cpp, diagnostics

pytestmark = pytest.mark.compiler

DATA = Path(__file__).resolve().parent / "data"


def head_of(error) -> list:
    return str(error.value).splitlines()[:4]


def test_first_error_comes_before_the_warnings():
    with pytest.raises(popsim.CodeletCompileError) as info:
        cpp.vertex_types_from_file(DATA / "late_error.cpp", "-Wall -Wextra")
    first, source, blank, title = head_of(info)
    assert first.startswith("the codelet file ") and "did not compile: " in first
    assert "late_error.cpp:21: " in first and "undeclaredValue" in first and "warning" not in first
    assert source.strip() == "*out = sum + undeclaredValue;"
    assert (blank, title) == ("", "compiler output:")
    output = str(info.value).split("compiler output:\n", 1)[1]
    assert output.index("warning") < output.index("undeclaredValue")   # the compiler's own order, in full
    assert "unusedLocal" in output and "unusedCounter" in output


def test_a_real_error_comes_before_warnings_that_werror_made_errors():
    with pytest.raises(popsim.CodeletCompileError) as info:
        cpp.vertex_types_from_file(DATA / "late_error.cpp", "-Wall -Wextra -Werror")
    first, source = head_of(info)[:2]
    assert "late_error.cpp:21: " in first and "undeclaredValue" in first
    assert "unusedLocal" in str(info.value).split("compiler output:\n", 1)[1]


def test_only_warnings_turned_errors_show_the_first_of_them():
    with pytest.raises(popsim.CodeletCompileError) as info:
        compiler.compile_library({"only_warnings.c": "static int f(void) { int x; return 0; }\n"
                                                     "int g(void) { return 1; }\n"},
                                 "c", flags=["-Wall", "-Werror"])
    first, source = head_of(info)[:2]
    assert first.startswith("the codelet did not compile: only_warnings.c:1: ") and "-Werror" in first
    assert source.strip().startswith("static int f(void)")


def test_generated_c_errors_come_first_too():
    source = "int a(void) { int unused; return 0; }\nint b(void) { return missing_name; }\n"
    with pytest.raises(popsim.CodeletCompileError) as info:
        compiler.compile_library({"generated.c": source}, "c", flags=["-Wall"])
    first, code = head_of(info)[:2]
    assert first.startswith("the codelet did not compile: generated.c:2: ") and "missing_name" in first
    assert code.strip() == "int b(void) { return missing_name; }"


def test_link_errors_are_named_when_no_line_is():
    output = ("/usr/bin/ld: /tmp/x.o: in function `f':\nx.c:(.text+0x5): undefined reference to `helper'\n"
              "collect2: error: ld returned 1 exit status\n")
    assert diagnostics.first_error(output) is None
    assert diagnostics.link_error(output) == "undefined reference to 'helper' (declared but never defined?)"
