"""The prebuilt codelet tier (popsim.codelet.prebuilt): a codelet the tier holds compiles
nothing in an empty user cache; an entry that does not match (another environment, other
code, a damaged library, an edited file) is ignored and the codelet compiles as before; a
user's own Python vertex compiles on first use with a line on stderr saying so."""
import json

import numpy as np
import pytest

from popsim import Input, Output, Vector, Vertex
from popsim.codelet import compiler, cpp, prebuilt, python_compile
from popsim.codelet.abi import run_compiled
from popsim.codelet.python_compile import translation_of, vertex_types_from_classes
from popsim.codelet.translate import compile_translations

pytestmark = pytest.mark.compiler


def make_vertex(scale: float, module: str = "popsim.generated.prebuilt_test"):
    """A fresh class (not yet compiled in this process) whose code depends on ``scale``."""
    class Scale(Vertex):
        in_: Input[Vector[float]]
        out: Output[Vector[float]]

        def compute(self):
            for i in range(len(self.in_)):
                self.out[i] = self.in_[i] * SCALE

    Scale.compute.__globals__["SCALE"] = scale
    Scale.__module__ = module
    Scale.vertex_name = f"test::Scale{str(scale).replace('.', '_')}"
    return Scale


SCALE = 0.0  # make_vertex sets it: the translation reads it as a constant


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """A user codelet cache with nothing in it (a fresh install's)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


@pytest.fixture(scope="module")
def build_cache(tmp_path_factory):
    """The build's own codelet cache (shared: the tests build the same tier)."""
    return tmp_path_factory.mktemp("prebuild-cache")


@pytest.fixture
def tier(tmp_path, monkeypatch):
    out = tmp_path / "prebuilt"
    out.mkdir()
    monkeypatch.setattr(prebuilt, "override", str(out))
    return out


def build_python_tier(tier, monkeypatch, cls, build_cache):
    """The tier holding ``cls``'s translation, compiled as the build compiles it."""
    with monkeypatch.context() as m:
        m.setattr(prebuilt, "override", "")
        m.setenv("XDG_CACHE_HOME", str(build_cache))
        translation = translation_of(cls)
        library = compile_translations([translation])
    (tier / "py-0.so").write_bytes(library.read_bytes())
    prebuilt.write_index(tier, prebuilt.python_entries("py-0.so", [translation]), {})
    return translation


def scaled(vt, values):
    out = np.zeros(len(values), np.float32)
    ret, ctx = run_compiled(vt, [np.array(values, np.float32), out])
    assert ret == 1 and ctx.error == 0
    return out


def test_a_prebuilt_python_vertex_compiles_nothing(tier, empty_cache, monkeypatch, build_cache):
    build_python_tier(tier, monkeypatch, make_vertex(3.0), build_cache)
    before = dict(compiler.stats)
    (vt,) = vertex_types_from_classes([make_vertex(3.0)])  # the same code, as a new process makes it
    assert compiler.stats["compiled"] == before["compiled"] and compiler.stats["cache_hits"] == before["cache_hits"]
    assert vt.library == tier / "py-0.so"
    assert list(scaled(vt, [1, 2])) == [3, 6]
    codelets = empty_cache / "popsim" / "codelets"
    assert not codelets.exists() or not any(codelets.iterdir())


@pytest.mark.parametrize("damage", ["environment", "code", "library", "format"])
def test_a_stale_or_foreign_entry_is_ignored(tier, empty_cache, monkeypatch, build_cache, damage):
    translation = build_python_tier(tier, monkeypatch, make_vertex(5.0), build_cache)
    index = json.loads((tier / "index.json").read_text())
    if damage == "environment":  # built by another compiler, popsim version, header...
        index["python"]["environment"] = "0" * 64
    elif damage == "code":  # the same symbol, other code
        index["python"]["vertices"][translation.symbol][1] = prebuilt.sha256_text(translation.c_code + " ")
    elif damage == "library":
        data = bytearray((tier / "py-0.so").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (tier / "py-0.so").write_bytes(bytes(data))
    else:
        index["format"] = prebuilt.FORMAT + 1
    (tier / "index.json").write_text(json.dumps(index))
    prebuilt._index.clear()
    prebuilt._good.clear()
    before = compiler.stats["compiled"]
    (vt,) = vertex_types_from_classes([make_vertex(5.0)])
    assert compiler.stats["compiled"] == before + 1
    assert vt.library.parent == compiler.cache_dir()
    assert list(scaled(vt, [1, 2])) == [5, 10]


CODELET = """#include <poplar/Vertex.hpp>
#include "factor.hpp"
struct Twice : poplar::Vertex {
  poplar::Input<poplar::Vector<float>> in;
  poplar::Output<poplar::Vector<float>> out;
  void compute() { for (unsigned i = 0; i < in.size(); ++i) out[i] = in[i] * kFactor; }
};
"""


def test_a_prebuilt_cpp_codelet_file_runs_no_compiler_and_an_edit_is_a_miss(tmp_path, tier, empty_cache,
                                                                              monkeypatch):
    src = tmp_path / "lib" / "twice.cpp"
    src.parent.mkdir()
    src.write_text(CODELET)
    (src.parent / "factor.hpp").write_text("constexpr float kFactor = 2.0f;\n")
    with monkeypatch.context() as m:  # the build: compiled with the tier off, in its own cache
        m.setattr(prebuilt, "override", "")
        m.setenv("XDG_CACHE_HOME", str(tmp_path / "build-cache"))
        name, entry = cpp.cpp_entry(src, "-O2", tier)
    prebuilt.write_index(tier, {}, {name: [entry]})
    monkeypatch.setattr(cpp, "_memo", {})  # as a new process: nothing known in memory either
    runs = []
    real_run = cpp._run_compiler
    monkeypatch.setattr(cpp, "_run_compiler", lambda *a: runs.append(a) or real_run(*a))
    before = compiler.stats["compiled"]
    (vt,) = cpp.vertex_types_from_file(src, "-O2")
    assert compiler.stats["compiled"] == before and runs == []  # neither preprocessed nor compiled
    assert vt.library == tier / entry["library"] and vt.source == f"{src}:3"
    assert list(scaled(vt, [1, 4])) == [2, 8]
    (src.parent / "factor.hpp").write_text("constexpr float kFactor = 4.0f;\n")  # the file's own header changed
    (vt,) = cpp.vertex_types_from_file(src, "-O2")
    assert compiler.stats["compiled"] == before + 1 and vt.library.parent == compiler.cache_dir()
    assert list(scaled(vt, [1, 4])) == [4, 16]


def test_a_cpp_file_prebuilt_plain_and_checked_serves_both_builds(tmp_path, tier, empty_cache, monkeypatch):
    """The build writes each C++ file twice (POPSIM_CHECKED_CODELETS off and on): a run in
    either mode takes its own library and compiles nothing."""
    src = tmp_path / "lib" / "twice.cpp"
    src.parent.mkdir()
    src.write_text(CODELET)
    (src.parent / "factor.hpp").write_text("constexpr float kFactor = 2.0f;\n")
    with monkeypatch.context() as m:
        m.setattr(prebuilt, "override", "")
        m.setenv("XDG_CACHE_HOME", str(tmp_path / "build-cache"))
        builds = [cpp.cpp_entry(src, "-O2", tier, checked=checked) for checked in (False, True)]
    assert builds[0][0] == builds[1][0] and builds[0][1]["library"] != builds[1][1]["library"]
    prebuilt.write_index(tier, {}, {builds[0][0]: [entry for _, entry in builds]})
    monkeypatch.setattr(cpp, "_memo", {})
    before = compiler.stats["compiled"]
    for checked, (_, entry) in zip((False, True), builds):
        (vt,) = cpp.vertex_types_from_file(src, "-O2", checked=checked)
        assert vt.library == tier / entry["library"], checked
        assert list(scaled(vt, [1, 4])) == [2, 8]
    assert compiler.stats["compiled"] == before


def test_a_users_vertex_compiles_on_first_use_and_says_so(empty_cache, capfd):
    user = make_vertex(7.0, module="my_vertices")
    (vt,) = vertex_types_from_classes([user])
    err = capfd.readouterr().err
    assert f"popsim: compiling Python vertex {user.vertex_name} for the host (first use" in err
    assert list(scaled(vt, [1])) == [7]
    vertex_types_from_classes([user])  # known now: no line
    library = make_vertex(9.0)  # PopLibs' own (module popsim.*): compiled quietly when not prebuilt
    vertex_types_from_classes([library])
    assert capfd.readouterr().err == ""
    python_compile._compiled.pop(user, None)


def test_one_compiler_called_by_another_name_keys_alike(tmp_path):
    """The build runs with CC=gcc (scikit-build-core sets it), a user's run with cc: one
    compiler, so the prebuilt tier's key must not depend on the name."""
    real = compiler.compiler_command("c")
    alias = tmp_path / "another-name-cc"
    alias.symlink_to(compiler.shutil.which(real))
    assert compiler._compiler_identity(str(alias)) == compiler._compiler_identity(real)
