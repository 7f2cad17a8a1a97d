"""add_codelets' dispatch (popsim.codelet.registry): what each kind of source registers,
and the errors for sources popsim cannot load."""
import sys

import pytest

import popsim

from vertex_harness import load_vertex


@pytest.mark.parametrize("name", ["matrix.gp", "codelets.o", "kernel.elf"])
def test_popc_output_is_refused_with_a_pointer_to_the_source(cpu_device, name):
    graph = popsim.Graph(cpu_device)
    with pytest.raises(popsim.PopsimError, match=r"compiled IPU code \(popc output\).*pass the C\+\+ codelet "
                                                 r"source instead.*add_codelets\('(matrix|codelets|kernel)\.cpp'\)"):
        graph.add_codelets(name)


def test_other_sources_are_refused_by_a_popsim_error(cpu_device):
    graph = popsim.Graph(cpu_device)
    with pytest.raises(popsim.PopsimError, match="is not a C.. codelet file"):
        graph.add_codelets("kernels.txt")
    with pytest.raises(popsim.PopsimError, match="takes a Vertex class, a vertex template"):
        graph.add_codelets(42)


@pytest.mark.compiler
def test_module_of_vertices_through_the_registry(tmp_path):
    from popsim.codelet.registry import CodeletRegistry
    cls, _ = load_vertex(tmp_path, "for i in range(len(self.in_)):\n    self.out[i] = self.in_[i] * self.k")
    module = sys.modules[cls.__module__]
    found = CodeletRegistry().add(module)
    assert [t.name for t in found] == ["V"] and found[0].python_class is cls
