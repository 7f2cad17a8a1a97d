"""Every back end of the typed IR (src/popsim/codelet/typed_ir.py) handles every kind of
node: a node kind added to the IR fails here until each back end that dispatches on kinds
names it (emit_c, interpret, op_costs) and the loop-versioning pass's generic walk reaches
its children. Read from the modules' source, so no node needs building by hand."""
import ast
import dataclasses
import inspect
import pathlib

import pytest

from popsim.codelet import loop_versioning, typed_ir

CODELET = pathlib.Path(typed_ir.__file__).parent

NODES = {name: cls for name, cls in vars(typed_ir).items()
         if inspect.isclass(cls) and cls.__module__ == typed_ir.__name__ and cls not in (typed_ir.Expr, typed_ir.Stmt)
         and issubclass(cls, (typed_ir.Expr, typed_ir.Stmt))}

# Kinds a back end never meets, and why.
NEVER_MET = {
    "emit_c": {},
    "interpret": {"LoopIndex": "only in loop versions' fast bodies, which only the C back end runs"},
    "op_costs": {"LoopIndex": "made after costing, by loop versioning",
                 "TickStmt": "made by op_costs itself, from the costs it finds"},
}


def kinds_dispatched(module: str) -> set:
    """The classes ``module`` tests nodes against with isinstance."""
    tree = ast.parse((CODELET / f"{module}.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
            kinds = node.args[1]
            for k in (kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]):
                if isinstance(k, ast.Name):
                    names.add(k.id)
    return names


def test_the_ir_has_the_node_kinds_these_tests_know():
    assert {"Const", "Load", "Binary", "LoopIndex", "Store", "ForRange", "TickStmt"} <= set(NODES)
    for exempt in NEVER_MET.values():
        assert set(exempt) <= set(NODES)


@pytest.mark.parametrize("module", sorted(NEVER_MET))
def test_each_back_end_handles_every_node_kind(module):
    missing = set(NODES) - kinds_dispatched(module) - set(NEVER_MET[module])
    assert not missing, f"{module}.py handles no {sorted(missing)}"


def _expr_fields(cls):
    """Fields of a node that hold one expression (not a local it assigns, not statements)."""
    return [f.name for f in dataclasses.fields(cls) if f.type in ("Expr", "Optional[Expr]")]


def test_loop_versioning_walks_every_child_expression():
    for name, cls in NODES.items():
        fields = _expr_fields(cls)
        walked = loop_versioning._CHILDREN if issubclass(cls, typed_ir.Expr) else loop_versioning._STMT_EXPRS
        missing = sorted(set(fields) - set(walked))
        assert not missing, f"{name}: loop_versioning.py does not walk {missing}"
    # lists of expressions: Intrinsic's arguments, walked by name
    assert [f.name for f in dataclasses.fields(typed_ir.Intrinsic) if f.type == "List[Expr]"] == ["args"]
