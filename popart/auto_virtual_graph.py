"""``virtualGraphMode = Auto``: shard a model over the IPUs of a replica as PopART's
AutoVirtualGraph transform does, one IPU number per node, which the Manual placement
(popart/placement.py) then builds (IpuCopy between IPUs, pipeline stages = IPUs).

PopART's rule, as learnt from its transform:

- **Cost of a node**: the bytes of the weights it reads (twice that with gradient
  accumulation, for the accumulator beside each weight), and, in training, the bytes of
  the activations its backward pass keeps live (its inputs and outputs that are not
  weights). Activations cost nothing in inference. popsim counts a weight once, at its
  first reader (the IPU it is created on), where PopART counts it at every reader. Where
  no node reads a weight (nothing to balance), the nodes' output bytes are their cost.
- **Split points**: walking the nodes in topological order, a node after which all the
  data flowing on to later nodes is that node's own output ("all data collapses into a
  single op"): cutting there sends only that node's outputs over the IPU-Links.
- **Choosing the splits**: with cumulative cost C_k after node k and a total T, the
  split for the end of IPU i (of I) is the split point whose C_k is closest to i T / I
  (the split node stays on the earlier IPU). popsim also keeps enough split points after
  each choice for the IPUs still to fill, so no IPU is left empty; with fewer than I - 1
  split points the model cannot be sharded so, and, as PopART, that is an error.
"""
import numpy as np

from .errors import popart_exception

#: bytes per element of the ONNX types a tensor may have (others count as 4)
ITEM_BYTES = {"FLOAT": 4, "FLOAT16": 2, "BFLOAT16": 2, "DOUBLE": 8, "INT64": 8, "UINT64": 8, "INT32": 4,
              "UINT32": 4, "INT16": 2, "UINT16": 2, "INT8": 1, "UINT8": 1, "BOOL": 1}


def tensor_bytes(model, tid) -> int:
    if tid in model.initializers:
        return int(np.asarray(model.initializers[tid]).nbytes)
    known = model.shapes.get(tid) or model.inputs.get(tid)
    if known is None:
        return 0
    dtype, shape = known
    return ITEM_BYTES.get(dtype, 4) * int(np.prod(shape, dtype=np.int64))


def node_costs(model, nodes, training=False, accumulation=False) -> list:
    """Each node's cost (PopART's: the weights it reads, and in training the activations
    its gradient reads), in the order of ``nodes``."""
    weights = {t for t, a in model.initializers.items() if np.asarray(a).dtype.kind == "f"}
    w_weights = 2.0 if accumulation else 1.0
    seen, costs = set(), []
    for n in nodes:
        cost = 0.0
        for tid in n.inputs:
            if tid in weights and tid not in seen:
                seen.add(tid)
                cost += w_weights * tensor_bytes(model, tid)
        if training:
            acts = {t for t in list(n.inputs) + list(n.outputs) if t and t not in weights and t not in
                    model.initializers}
            cost += sum(tensor_bytes(model, t) for t in acts)
        costs.append(cost)
    if not any(costs):   # no weights to balance: the activations each node makes
        costs = [float(sum(tensor_bytes(model, t) for t in n.outputs if t)) for n in nodes]
    return costs


def split_points(nodes) -> list:
    """The indices k of ``nodes`` (topological order) after which every tensor made by
    nodes[:k+1] and read by nodes[k+1:] is an output of nodes[k]; the last node is none."""
    last_read = {}
    for i, n in enumerate(nodes):
        for tid in n.inputs:
            if tid:
                last_read[tid] = i
    producer = {t: i for i, n in enumerate(nodes) for t in n.outputs if t}
    live = {}   # tensor made so far -> index of its last reader, while it is still read later
    points = []
    for k, n in enumerate(nodes[:-1]):
        for t in n.outputs:
            if t and last_read.get(t, -1) > k:
                live[t] = last_read[t]
        live = {t: r for t, r in live.items() if r > k}
        if all(producer[t] == k for t in live):
            points.append(k)
    return points


def auto_split(model, nodes, ipus: int, training=False, accumulation=False) -> dict:
    """``{id(node): ipu}`` for ``nodes`` (the placed nodes of ``model``, in topological
    order) over ``ipus`` IPUs."""
    if ipus < 2 or not nodes:
        return {id(n): 0 for n in nodes}
    costs = node_costs(model, nodes, training, accumulation)
    cumulative = np.cumsum(costs)
    total = float(cumulative[-1])
    points = split_points(nodes)
    if len(points) < ipus - 1:
        raise popart_exception(
            f"virtualGraphMode Auto: couldn't find enough splits for {ipus} IPUs (only {len(points)} point(s) in the "
            f"{len(nodes)} ops where all data flows through one op); shard the model over fewer IPUs, or place its "
            "ops yourself with virtualGraphMode = Manual and builder.virtualGraph")
    chosen, start = [], 0
    for i in range(1, ipus):
        target = total * i / ipus
        # leave a split point for each IPU after this one
        window = points[start:len(points) - (ipus - 1 - i)]
        j = min(range(len(window)), key=lambda q: (abs(float(cumulative[window[q]]) - target), q))
        chosen.append(window[j])
        start += j + 1
    placement, ipu = {}, 0
    for k, n in enumerate(nodes):
        placement[id(n)] = ipu
        if ipu < len(chosen) and k == chosen[ipu]:
            ipu += 1
    return placement
