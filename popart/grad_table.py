"""The gradient table: each op type autodiff (autodiff.py) differentiates and the rule that
appends its backward PopLibs ops (popart/grads/). A rule is called as
``rule(ctx, node, inputs, outputs, grads)``: the forward values of the node's inputs and
outputs (device tensors, or host constants), the gradients of its outputs (a device tensor,
or None where none flows), and returns one gradient per input (None where the input takes
none: integers, shapes, constants)."""
from typing import Callable, Dict

GRADS: Dict[str, Callable] = {}


def grad(*op_types: str):
    """Register ``rule`` as the gradient of ``op_types``."""
    def register(rule):
        for op_type in op_types:
            GRADS[op_type] = rule
        return rule
    return register


def grad_rule(op_type: str):
    """The rule of ``op_type``, or None."""
    _load()
    return GRADS.get(op_type)


def differentiable_ops() -> list:
    _load()
    return sorted(GRADS)


def _load() -> None:
    from . import grads  # noqa: F401 - registers the rules
