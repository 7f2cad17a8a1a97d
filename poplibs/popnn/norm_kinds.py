"""The norms popnn builds (PopLibs' popnn BatchNorm, GroupNorm, LayerNorm and InstanceNorm),
one NormKind entry each: what differs between them. The maths they share is norm_core.py
(statistics per index of dimension 1 of the activations, over every other dimension); batch
norm hands it the activations as they are (a statistic per channel), the group family a
view with one index of dimension 1 per (batch element, group of channels) (gn.py).

An entry names the norm's module (``popnn.<module>``; its public functions are PopLibs'
names, ``<stem>_norm_<step>`` and ``<stem>_normalise``), the prefix of its default debug
names, the options it takes, what one of its statistics is (for errors) and, for the
group family, how many groups a batch element's channels form (``groups(acts,
num_groups)``: group norm the caller's count, layer norm 1, instance norm one per channel;
None for batch norm).

To add a norm of the group family: its entry here, then its module (as ln.py: each public
function calls gn's step of the same name, ``gn.statistics``, ``gn.whiten``, ...,
``bn.param_update``, with the entry) and its import in popnn/__init__.py. A norm whose
statistics need another view of the activations: its entry, and a module building that
view and calling norm_core as bn.py and gn.py do, with the entry's names and options.
"""
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

#: the group family's option (PopLibs' GroupNorm option; gn.strided reads it)
STRIDED_OPTION = "groupNormStridedChannelGrouping"


@dataclass(frozen=True)
class NormKind:
    """One norm (module docstring): its ``module`` and function ``stem``, debug-name
    ``prefix``, ``options`` taken, what one of its ``stats`` is, and ``groups`` (the group
    family's count of groups per batch element; None for batch norm)."""
    module: str
    stem: str
    prefix: str
    options: Tuple[str, ...]
    stats: str
    groups: Optional[Callable] = None

    def what(self, step: str) -> str:
        """The public function of ``step`` (statistics, whiten, normalise, param_gradients,
        gradients, param_update), as errors name it: ``popnn.gn.group_norm_whiten``."""
        function = f"{self.stem}_normalise" if step == "normalise" else f"{self.stem}_norm_{step}"
        return f"popnn.{self.module}.{function}"


BATCH = NormKind("bn", "batch", "BN", (), "one per channel C")
GROUP = NormKind("gn", "group", "GN", (STRIDED_OPTION,), "one per batch element and group, b·G + g",
                 groups=lambda acts, num_groups: num_groups)
LAYER = NormKind("ln", "layer", "LN", (STRIDED_OPTION,), "one per batch element, b",
                 groups=lambda acts, num_groups: 1)
INSTANCE = NormKind("in_", "instance", "IN", (STRIDED_OPTION,), "one per batch element and channel, b·C + c",
                    groups=lambda acts, num_groups: int(acts.shape[1]))

NORMS = (BATCH, GROUP, LAYER, INSTANCE)

__all__ = ["BATCH", "GROUP", "INSTANCE", "LAYER", "NORMS", "NormKind", "STRIDED_OPTION"]
