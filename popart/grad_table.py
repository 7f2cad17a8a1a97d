"""The gradient table: each op type autodiff (autodiff.py) differentiates and the rule that
appends its backward PopLibs ops (popart/grads/). A rule is called as
``rule(ctx, node, inputs, outputs, grads)``: the forward values of the node's inputs and
outputs (device tensors, or host constants), the gradients of its outputs (a device tensor,
or None where none flows), and returns one gradient per input (None where the input takes
none: integers, shapes, constants). A fused rule (``fused_grad``) differentiates two nodes
at once, as PopART's patterns do."""
from typing import Callable, Dict

GRADS: Dict[str, Callable] = {}
#: (producer op, consumer op) -> a rule giving the producer's input gradient from the
#: consumer's output gradient in one go, as PopART's patterns fuse them (Softmax then Nll:
#: p - onehot). Autodiff uses it where the producer's output feeds only the consumer.
FUSED: Dict[tuple, Callable] = {}


def grad(*op_types: str):
    """Register ``rule`` as the gradient of ``op_types``."""
    def register(rule):
        for op_type in op_types:
            GRADS[op_type] = rule
        return rule
    return register


def fused_grad(producer: str, consumer: str, when: Callable):
    """Register ``rule(ctx, producer_node, consumer_node, inputs, grads)`` (the consumer's
    inputs and output gradients) as the fused gradient of ``producer`` then ``consumer``,
    used where ``when(producer_node, consumer_node, values, opset)`` holds."""
    def register(rule):
        FUSED[(producer, consumer)] = (rule, when)
        return rule
    return register


def fused_rule(producer, consumer, values, opset):
    """The fused rule of nodes ``producer`` then ``consumer``, or None (none, or not here)."""
    _load()
    rule, when = FUSED.get((producer.op_type, consumer.op_type), (None, None))
    return rule if rule is not None and when(producer, consumer, values, opset) else None


def grad_rule(op_type: str):
    """The rule of ``op_type``, or None."""
    _load()
    return GRADS.get(op_type)


def differentiable_ops() -> list:
    _load()
    return sorted(GRADS)


def _load() -> None:
    from . import grads  # noqa: F401 - registers the rules
