# TEMPORARY: replaced by helper PL's planner at merge
"""The simplest sound matmul plan: conv groups, then batch (M) and out-channels (N, in
grains of 8) split in parallel over the tiles to even out the per-tile work; no
in-channel split, no serial splits. Only ``partialsType`` is read from the options."""
from popsim import FLOAT, HALF

from ..poputil import PoplibsError
from .plan import Method, Partition, Plan, Split


def _ceil(a, b):
    return -(-a // b)


def get_plan(target, params, options=None, cache=None) -> Plan:
    options = dict(options or {})
    partials = {"float": FLOAT, "half": HALF}.get(str(options.get("partialsType", "float")).lower())
    if partials is None:
        raise PoplibsError(f"poplin: unknown partialsType {options.get('partialsType')!r}: 'float' or 'half'")
    tiles = target.num_tiles
    groups, m, n = params.num_conv_groups, params.batch_size, params.output_channels_per_group
    grain = 8
    gs = max(1, min(groups, tiles))
    per_group = max(1, tiles // gs)
    n_grains = max(1, _ceil(n, grain))
    best = None
    for ms in range(1, min(max(m, 1), per_group) + 1):
        ns = max(1, min(n_grains, per_group // ms))
        work = _ceil(max(m, 1), ms) * _ceil(n_grains, ns)
        if best is None or work < best[0]:
            best = (work, ms, ns)
    _, ms, ns = best
    load = 4 if params.data_type == HALF else 2
    return Plan(Partition(field_split=(1,), batch_split=ms, out_chan_split=Split(1, ns), kernel_split=(1,),
                          in_chan_split=Split(1, 1), conv_group_split=gs, out_chan_grain_size=grain),
                Method("AMP", 8, load), in_chans_per_group=load * 4, partial_chans_per_group=grain,
                partials_type=partials, inter_tile_partials_type=FLOAT, tiles_used=gs * ms * ns)
