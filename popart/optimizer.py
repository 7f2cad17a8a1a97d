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

#: PopART's SGD keys and their defaults (all const); nesterov is 0 or 1
SGD_DEFAULTS = {"defaultLearningRate": 0.1, "defaultWeightDecay": 0.0, "defaultMomentum": 0.0,
                "defaultDampening": 0.0, "defaultVelocityScaling": 1.0, "lossScaling": 1.0, "nesterov": 0.0}
#: insertSpecific's keys -> the default they override
SPECIFIC_KEYS = {"learningRate": "defaultLearningRate", "weightDecay": "defaultWeightDecay",
                 "momentum": "defaultMomentum", "dampening": "defaultDampening",
                 "velocityScaling": "defaultVelocityScaling", "nesterov": "nesterov"}


def _pairs(values, known, what: str) -> dict:
    if not isinstance(values, dict):
        raise popart_exception(f"{what}: expected a dict of {sorted(known)} -> (value, isConst), found "
                               f"{type(values).__name__}")
    out = {}
    for key, pair in values.items():
        if key not in known:
            raise popart_exception(f"{what}: unknown key {key!r}; known: {sorted(known)}")
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and isinstance(pair[0], (int, float))
                and not isinstance(pair[0], bool)):
            raise popart_exception(f"{what}: {key} must be a (value, isConst) pair, e.g. (0.01, False), found {pair!r}")
        out[known[key] if isinstance(known, dict) else key] = (float(pair[0]), bool(pair[1]))
    return out


class SGD:
    """``SGD({key: (value, isConst)})`` with PopART's keys (SGD_DEFAULTS); values for one
    weight by ``insertSpecific(weight_id, {"learningRate": (v, isConst), ...})``."""

    def __init__(self, values=None):
        self.values = {k: (v, True) for k, v in SGD_DEFAULTS.items()}
        self.values.update(_pairs({} if values is None else values, list(SGD_DEFAULTS), "SGD"))
        self.specific = {}
        self._check(self.values, "SGD")

    @staticmethod
    def _check(values, what):
        if values["defaultVelocityScaling"][0] == 0 or values["lossScaling"][0] == 0:
            raise popart_exception(f"{what}: velocity scaling and lossScaling must be non-zero")
        if not values["nesterov"][1] or values["nesterov"][0] not in (0.0, 1.0):
            raise popart_exception(f"{what}: nesterov must be (0, True) or (1, True) (const), found "
                                   f"{values['nesterov']}")
        if values["nesterov"][0] and values["defaultMomentum"] == (0.0, True):
            raise popart_exception(f"{what}: nesterov needs momentum; give a momentum")

    def insertSpecific(self, weightId, values) -> None:  # noqa: N802,N803 - PopART's names
        """Values for the weight ``weightId`` (keys: SPECIFIC_KEYS), the others the defaults."""
        merged = self.for_weight(None)
        merged.update(_pairs(values, SPECIFIC_KEYS, f"SGD.insertSpecific({weightId!r})"))
        self._check(merged, f"SGD.insertSpecific({weightId!r})")
        self.specific[str(weightId)] = merged

    def hasSpecific(self, weightId) -> bool:  # noqa: N802,N803
        return str(weightId) in self.specific

    def for_weight(self, tid) -> dict:
        """The (value, isConst) pairs that update weight ``tid`` (None: the defaults)."""
        return dict(self.specific.get(tid, self.values))

    def value(self, key, tid=None) -> float:
        return self.for_weight(tid)[key][0]

    def is_const(self, key, tid=None) -> bool:
        return self.for_weight(tid)[key][1]

    def learningRates(self):  # noqa: N802 - PopART's name
        return self.value("defaultLearningRate")

    def has_momentum(self, tid=None) -> bool:
        return self.value("defaultMomentum", tid) != 0.0 or not self.is_const("defaultMomentum", tid)

    def all_const(self) -> bool:
        return all(c for group in [self.values] + list(self.specific.values()) for _, c in group.values())

    def factors(self, tid=None) -> dict:
        """The compound factors of weight ``tid``'s update (as PopART's SGD names their ideas)."""
        lr, wd, mm, dm, vs, ls, nesterov = (self.value(k, tid) for k in SGD_DEFAULTS)
        if self.has_momentum(tid):
            out = {"lossScaling": ls, "momentum": mm, "gradScale": (1 - dm) * vs / ls,
                   "weightScale": (1 - dm) * wd * vs, "velocityRate": lr / vs}
            if nesterov:
                out.update({"nesterovGradScale": vs / ls, "nesterovWeightScale": vs * wd})
            return out
        return {"lossScaling": ls, "weightDecayScaleFactor": 1 - lr * (1 - dm) * wd,
                "scaledLearningRate": lr * (1 - dm) / ls}

    def __repr__(self):
        return f"SGD({self.values}, specific={self.specific})"


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


def _handle(group, key, ipu=None) -> str:
    """The host write of a factor: the defaults' ``optimizer/<factor>``, a weight's
    ``optimizer/<weight id>/<factor>``; ``/ipu<k>`` after it for its copy on IPU k (Manual virtual graphs)."""
    where = "" if ipu is None else f"/ipu{ipu}"
    return (f"optimizer/{key}" if group is None else f"optimizer/{group}/{key}") + where


class Update:
    """The weight update of ``optimizer`` on a graph: each weight's factors (numbers, or
    device scalars when any value is non-const), the defaults' shared by the weights
    without specific values."""

    def __init__(self, graph, optimizer: SGD, ipus=None):
        self.top, self.graph, self.optimizer = graph, graph, optimizer
        self.ipus, self.ipu = ipus or [], None   # virtual graphs: ``on(k)`` puts what follows on IPU k
        self.tensors: dict = {}   # (group: None or a weight id, factor, IPU) -> device scalar
        self.device = not optimizer.all_const()

    def on(self, ipu):
        """Put the scalars, seed and updates that follow on IPU ``ipu``'s virtual graph (None: the graph's)."""
        self.ipu = ipu
        self.graph = self.top if ipu is None else self.ipus[ipu]
        return self

    def _group(self, tid):
        return tid if tid is not None and self.optimizer.hasSpecific(tid) else None

    def has_momentum(self, tid) -> bool:
        return self.optimizer.has_momentum(self._group(tid))

    def scalar(self, key, tid=None):
        """Weight ``tid``'s factor ``key``: a tensor (read at run time) or a number."""
        group = self._group(tid)
        value = float(self.optimizer.factors(group)[key])
        if not self.device:
            return value
        if (group, key, self.ipu) not in self.tensors:   # one copy on each IPU that reads it
            handle = _handle(group, key, self.ipu)
            t = self.graph.add_variable(FLOAT, (1,), handle)
            self.graph.set_tile_mapping(t, 0)
            self.graph.create_host_write(handle, t)
            self.tensors[(group, key, self.ipu)] = t
        return self.tensors[(group, key, self.ipu)].reshape(())

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
        for (group, key, ipu), t in self.tensors.items():
            engine.write_tensor(_handle(group, key, ipu), np.array([optimizer.factors(group)[key]], np.float32))

    def _factors(self, tid, before: int, keys):
        """(the device-scalar operands, key -> expression) of weight ``tid``'s factors
        ``keys``, placeholders numbered after ``before`` tensor operands."""
        operands, exprs = [], {}
        for key in keys:
            value = self.scalar(key, tid)
            if isinstance(value, float):
                exprs[key] = pe.Const(value, FLOAT)
            else:
                operands.append(value)
                exprs[key] = pe.PlaceHolder(before + len(operands))
        return operands, exprs

    def apply(self, tid, w, g, v, prog, name: str) -> None:
        """The update of weight ``tid`` (tensor ``w``) by its gradient ``g`` (and velocity ``v``)."""
        if not self.has_momentum(tid):
            extra, f = self._factors(tid, 2, ("weightDecayScaleFactor", "scaledLearningRate"))
            popops.map_in_place(self.graph, pe._1 * f["weightDecayScaleFactor"] - pe._2 * f["scaledLearningRate"],
                                [w, g] + extra, prog, f"{name}/sgd0")
            return
        extra, f = self._factors(tid, 3, ("momentum", "gradScale", "weightScale"))
        popops.map_in_place(self.graph, pe._1 * f["momentum"] + pe._2 * f["gradScale"] + pe._3 * f["weightScale"],
                            [v, g, w] + extra, prog, f"{name}/velocity")
        if "nesterovGradScale" in self.optimizer.factors(self._group(tid)):
            keys = ("velocityRate", "nesterovGradScale", "nesterovWeightScale", "momentum")
            extra, f = self._factors(tid, 3, keys)
            step = pe._2 * f["nesterovGradScale"] + pe._1 * f["nesterovWeightScale"] + pe._3 * f["momentum"]
            popops.map_in_place(self.graph, pe._1 - step * f["velocityRate"], [w, g, v] + extra, prog,
                                f"{name}/nesterov")
            return
        extra, f = self._factors(tid, 2, ("velocityRate",))
        popops.map_in_place(self.graph, pe._1 - pe._2 * f["velocityRate"], [w, v] + extra, prog, f"{name}/sgd1")
