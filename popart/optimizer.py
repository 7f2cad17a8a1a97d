"""PopART's SGD optimizers: ``SGD({"defaultLearningRate": (0.01, False), ...})`` (each
value a (value, isConst) pair) and ``ConstSGD(learning_rate, weight_decay=0,
loss_scaling=1)``, and the weight update they append, as PopART's SGD states it (lr
learning rate, wd weight decay, mm momentum, dm dampening, vs velocity scaling, ls loss
scaling; g the loss-scaled gradient, summed over the micro-batches with gradient
accumulation):

- without momentum: ``w = w * (1 - lr (1 - dm) wd) - g * lr (1 - dm) / ls``;
- with momentum: ``v = v mm + g (1 - dm) vs / ls + w (1 - dm) wd vs``, ``w = w - v lr / vs``
  (v starts at 0).

The loss's gradient starts at ls. The factors are numbers in the program where every value
is const; otherwise they are one-element device tensors, written from the host by
weightsFromHost and updateOptimizerFromHost."""
import numpy as np

from popsim import FLOAT, popops, poputil
from popsim.popops import expr as pe

from .errors import popart_exception

#: PopART's SGD keys and their defaults (all const)
SGD_DEFAULTS = {"defaultLearningRate": 0.1, "defaultWeightDecay": 0.0, "defaultMomentum": 0.0,
                "defaultDampening": 0.0, "defaultVelocityScaling": 1.0, "lossScaling": 1.0}


class SGD:
    """``SGD({key: (value, isConst)})`` with PopART's keys (SGD_DEFAULTS)."""

    def __init__(self, values=None):
        values = {} if values is None else values
        if not isinstance(values, dict):
            raise popart_exception(f"SGD: expected a dict of {sorted(SGD_DEFAULTS)} -> (value, isConst), found "
                                   f"{type(values).__name__}")
        self.values = {k: (v, True) for k, v in SGD_DEFAULTS.items()}
        for key, pair in values.items():
            if key not in SGD_DEFAULTS:
                raise popart_exception(f"SGD: unknown key {key!r}; known: {sorted(SGD_DEFAULTS)}")
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], (int, float))
                    and not isinstance(pair[0], bool)):
                raise popart_exception(f"SGD: {key} must be a (value, isConst) pair, e.g. (0.01, False), found {pair!r}")
            self.values[key] = (float(pair[0]), bool(pair[1]))
        if self.value("defaultVelocityScaling") == 0 or self.value("lossScaling") == 0:
            raise popart_exception("SGD: defaultVelocityScaling and lossScaling must be non-zero")

    def value(self, key) -> float:
        return self.values[key][0]

    def is_const(self, key) -> bool:
        return self.values[key][1]

    def learningRates(self):  # noqa: N802 - PopART's name
        return self.value("defaultLearningRate")

    def has_momentum(self) -> bool:
        return self.value("defaultMomentum") != 0.0 or not self.is_const("defaultMomentum")

    def all_const(self) -> bool:
        return all(c for _, c in self.values.values())

    def factors(self) -> dict:
        """The compound factors of the update (as PopART's SGD names their ideas)."""
        lr, wd, mm, dm, vs, ls = (self.value(k) for k in ("defaultLearningRate", "defaultWeightDecay",
                                                        "defaultMomentum", "defaultDampening",
                                                        "defaultVelocityScaling", "lossScaling"))
        if self.has_momentum():
            return {"lossScaling": ls, "momentum": mm, "gradScale": (1 - dm) * vs / ls,
                    "weightScale": (1 - dm) * wd * vs, "velocityRate": lr / vs}
        return {"lossScaling": ls, "weightDecayScaleFactor": 1 - lr * (1 - dm) * wd,
                "scaledLearningRate": lr * (1 - dm) / ls}

    def __repr__(self):
        return f"SGD({self.values})"


class ConstSGD(SGD):
    """``ConstSGD(learning_rate, weight_decay=0, loss_scaling=1)``: an SGD whose values are all const."""

    def __init__(self, learning_rate, weight_decay=0.0, loss_scaling=1.0):
        super().__init__({"defaultLearningRate": (float(learning_rate), True),
                          "defaultWeightDecay": (float(weight_decay), True),
                          "lossScaling": (float(loss_scaling), True)})


def check_optimizer(optimizer, what: str) -> SGD:
    if not isinstance(optimizer, SGD):
        raise popart_exception(f"{what}: optimizer must be a popart.SGD or popart.ConstSGD, found "
                               f"{type(optimizer).__name__} (popsim.popart has no other optimizer yet)")
    return optimizer


class Update:
    """The weight update of ``optimizer`` on a graph: its factors (numbers or device scalars)."""

    def __init__(self, graph, optimizer: SGD):
        self.graph, self.optimizer = graph, optimizer
        self.momentum = optimizer.has_momentum()
        self.tensors = {}
        if not optimizer.all_const():
            for key in optimizer.factors():
                t = graph.add_variable(FLOAT, (1,), f"optimizer/{key}")
                graph.set_tile_mapping(t, 0)
                graph.create_host_write(f"optimizer/{key}", t)
                self.tensors[key] = t

    def scalar(self, key):
        """The factor as a tensor (read at run time) or a number."""
        return self.tensors[key].reshape(()) if key in self.tensors else float(self.optimizer.factors()[key])

    def seed(self, shape, prog):
        """The loss's gradient: ls at every element of the loss."""
        ls = self.scalar("lossScaling")
        if isinstance(ls, float):
            c = self.graph.add_constant(FLOAT, tuple(shape), np.full(tuple(shape), ls, np.float32), "lossScaling")
            poputil.map_tensor_linearly(self.graph, c)
            return c
        seed = self.graph.add_variable(FLOAT, tuple(shape), "lossScaling/seed")
        poputil.map_tensor_linearly(self.graph, seed)
        popops.fill(self.graph, seed, 0.0, prog, "lossScaling/zero")
        popops.add_in_place(self.graph, seed, ls, prog, "lossScaling/seed")
        return seed

    def write(self, engine, optimizer: SGD) -> None:
        """Write the factors of ``optimizer`` (of the same structure) to the device."""
        for key, value in optimizer.factors().items():
            if key in self.tensors:
                engine.write_tensor(f"optimizer/{key}", np.array([value], np.float32))

    def _factors(self, before: int, keys):
        """(the device-scalar operands, key -> expression) of the factors ``keys``,
        placeholders numbered after ``before`` tensor operands."""
        operands, exprs = [], {}
        for key in keys:
            value = self.scalar(key)
            if isinstance(value, float):
                exprs[key] = pe.Const(value, FLOAT)
            else:
                operands.append(value)
                exprs[key] = pe.PlaceHolder(before + len(operands))
        return operands, exprs

    def apply(self, w, g, v, prog, name: str) -> None:
        """The update of weight ``w`` by its gradient ``g`` (and velocity ``v``)."""
        if not self.momentum:
            extra, f = self._factors(2, ("weightDecayScaleFactor", "scaledLearningRate"))
            popops.map_in_place(self.graph, pe._1 * f["weightDecayScaleFactor"] - pe._2 * f["scaledLearningRate"],
                                [w, g] + extra, prog, f"{name}/sgd0")
            return
        extra, f = self._factors(3, ("momentum", "gradScale", "weightScale"))
        popops.map_in_place(self.graph, pe._1 * f["momentum"] + pe._2 * f["gradScale"] + pe._3 * f["weightScale"],
                            [v, g, w] + extra, prog, f"{name}/velocity")
        extra, f = self._factors(2, ("velocityRate",))
        popops.map_in_place(self.graph, pe._1 - pe._2 * f["velocityRate"], [w, v] + extra, prog, f"{name}/sgd1")
