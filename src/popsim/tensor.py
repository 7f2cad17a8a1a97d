"""Tensor: a view of elements of one or more variables. Views never create state.

A view is either *strided* (one variable, an element offset and numpy-style strides:
indexing, slicing, transposes, most reshapes, reversal and subsampling stay in this
form and cost O(rank)) or *indexed* (an int64 array of global element ids in the
view's shape, used when a view mixes variables or repeats elements irregularly).
Either way the semantics are numpy's, applied to the array of element ids.
"""
from __future__ import annotations

from typing import Any, Callable, ClassVar, Iterator, List, Optional, Sequence, Tuple, Union, cast

import numpy as np

from . import errors, id_slices, views
from .arguments import as_index, as_indices, found
from .errors import IndexError, TensorCreationError  # noqa: A004 - popsim.IndexError, Poplar's name
from .poplar_names import SnakeCaseNames
from .types import ShapeLike, Type, TypeLike, as_type
from .variables import Variable, VariableInterval, VariableTable, var_regions

__all__ = ["Tensor"]

Shape = Tuple[int, ...]

_new = object.__new__


class Tensor(SnakeCaseNames):
    """A view of device elements with a shape and an element type.

    Build views with numpy-style indexing (``t[1:3, 0]``) or Poplar's methods
    (``slice``, ``reshape``, ``dim_shuffle``, ``broadcast``...); none of them copy data
    or create state.
    """

    __slots__ = ("_table", "_dtype", "_shape", "_var", "_offset", "_strides", "_ids", "_run_cache", "_steps")
    _table: VariableTable  # the slots' types, for type checkers (the class gets no attributes)
    _dtype: Type
    _shape: Shape
    _var: Optional[Variable]  # None in an indexed view
    _offset: int
    _strides: Shape
    _ids: Optional[np.ndarray]  # None in a strided view
    _run_cache: Optional[Tuple[np.ndarray, np.ndarray]]  # an indexed view's runs, computed once (never changed)
    _steps: object  # a 1-D indexed view's step facts for slices (id_slices.py), set on first use

    def __init__(self):
        raise errors.TypeError("tensors are created by a Graph (add_variable, add_constant) and by view operations")

    # -- construction (internal) ------------------------------------------------------------
    _strided: ClassVar[Callable[..., Tensor]]  # (table, var, dtype, shape, offset, strides): _strided_view below

    @classmethod
    def _of_variable(cls, table: VariableTable, var: Variable) -> "Tensor":
        return _strided_view(table, var, var.dtype, var.shape, 0, views.c_strides(var.shape))

    @classmethod
    def _indexed(cls, table: VariableTable, dtype: Type, ids: np.ndarray) -> "Tensor":
        t = object.__new__(cls)
        t._table, t._dtype, t._ids = table, dtype, ids
        t._shape = tuple(int(n) for n in ids.shape)
        t._var, t._offset, t._strides, t._run_cache = None, 0, (), None
        return t

    def _like(self, shape: Shape, offset: int, strides: Shape) -> "Tensor":
        return _strided_view(self._table, self._var, self._dtype, shape, offset, strides)

    def _with_ids(self, ids: np.ndarray) -> "Tensor":
        return Tensor._indexed(self._table, self._dtype, ids)

    def _id_array(self) -> np.ndarray:
        """Global element ids in the view's shape (a numpy array; may be a shared view)."""
        if self._ids is not None:
            return self._ids
        return views.strided_ids(cast(Variable, self._var).base + self._offset, self._shape, self._strides)

    # -- queries ----------------------------------------------------------------------------
    @property
    def shape(self) -> Shape:
        return self._shape

    @property
    def rank(self) -> int:
        return len(self._shape)

    @property
    def dtype(self) -> Type:
        return self._dtype

    @property
    def element_type(self) -> Type:
        return self._dtype

    @property
    def metadata(self) -> Optional["Tensor"]:
        """A QUARTER tensor's QUARTER_METADATA tensor (Poplar's ``getMetadata()``); None
        for other types. Views joining QUARTER variables of different metadata have none
        to give: a TensorCreationError."""
        if self._dtype.name != "QUARTER":
            return None
        owners = {id(v.metadata): v.metadata for v in self._variables()}
        if len(owners) > 1:
            raise TensorCreationError(f"{self._describe()} joins QUARTER variables of {len(owners)} different metadata "
                                      "tensors; cast or copy them to one metadata first")
        return next(iter(owners.values()), None)

    def num_elements(self) -> int:
        n = 1
        for d in self._shape:
            n *= d
        return n

    def dim(self, i: int) -> int:
        if type(i) is int and 0 <= i < len(self._shape):
            return self._shape[i]
        return self._shape[self._check_dim(i, "dim")]

    @property
    def name(self) -> str:
        """The debug name of the variable(s) the view covers."""
        if self._var is not None:
            return self._var.name
        names: List[str] = []
        for v in self._variables():
            if v.name not in names:
                names.append(v.name)
        return "+".join(names) if names else "<empty>"

    def __len__(self) -> int:
        if not self._shape:
            raise errors.TypeError(f"len() of a rank-0 tensor ({self.name})")
        return self._shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, shape={list(self._shape)}, dtype={self._dtype.name})"

    def _variables(self) -> List[Variable]:
        if self._var is not None:
            return [self._var]
        ids = cast(np.ndarray, self._ids)  # an indexed view
        if ids.size == 0:
            return []
        lo, hi = self._table.index_of(np.array([ids.min(), ids.max()])).tolist()
        if lo == hi:   # variables are ranges of ids: everything between two of one is of it
            return [self._table.variables[lo]]
        idx = np.unique(self._table.index_of(self._runs()[0]))  # a run never crosses variables
        return [self._table.variables[i] for i in idx.tolist()]

    def _describe(self) -> str:
        return f"tensor '{self.name}' of shape {list(self._shape)}"

    # -- element-level helpers for lowering ---------------------------------------------------
    def _element_ids(self) -> np.ndarray:
        """Flat global element ids in row-major view order."""
        return self._id_array().reshape(-1)

    def _runs(self) -> Tuple[np.ndarray, np.ndarray]:
        """(first global id, length) of maximal runs of consecutive elements, in view
        order; a run never crosses from one variable into another."""
        if self._ids is None:
            return views.strided_runs(cast(Variable, self._var).base + self._offset, self._shape, self._strides)
        if self._run_cache is None:
            ids = self._ids.reshape(-1)
            at = self._table.run_starts(ids)
            self._run_cache = ids[at].astype(np.int64, copy=False), np.diff(np.append(at, ids.size)).astype(np.int64)
        return self._run_cache

    def is_contiguous(self) -> bool:
        """Whether the view is one run of consecutive elements of one variable, in order."""
        if self._ids is None:
            return self.num_elements() == 0 or views.contiguous_inner(self._shape, self._strides)[0] == 0
        return self._runs()[0].size <= 1

    def contains_aliases(self) -> bool:
        """Whether some element appears more than once in the view."""
        if self._ids is None:
            return self.num_elements() > 0 and any(n > 1 and s == 0 for n, s in zip(self._shape, self._strides))
        # by runs of consecutive ids (a blocked view of a million elements is a few thousand
        # runs): sorting the runs is far cheaper than hashing every id
        return views.runs_self_overlap(*views.ids_runs(self._ids.reshape(-1), None))

    def get_var_regions(self) -> List[VariableInterval]:
        """Poplar's getVarRegions: the view's elements, in order, as runs within variables."""
        return var_regions(self._table, *self._runs())

    def contains_constant(self) -> bool:
        return any(v.is_constant for v in self._variables())

    def intersects_with(self, other: "Tensor") -> bool:
        """Whether the two views share an element."""
        if not isinstance(other, Tensor):
            raise errors.TypeError(f"intersects_with needs a Tensor, found {type(other).__name__}")
        if self._table is not other._table:
            return False
        return views.runs_overlap(self._runs(), other._runs())

    # -- indexing ---------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> "Tensor":  # numpy-style: ints, slices, lists, arrays
        """numpy basic indexing: integers (dropping a dimension), slices, ``...``, ``None``."""
        # Graph building indexes views hundreds of thousands of times: plain ints and slices of a
        # strided view are answered here; everything else, and every error, by _index_general,
        # which these fast paths must match exactly (tests/test_tensor_fast_paths.py).
        if self._ids is not None:
            if type(key) is int and len(self._shape) > 1 and -self._shape[0] <= key < self._shape[0]:
                return Tensor._indexed(self._table, self._dtype, self._ids[key])  # _index_general's result
        else:
            kind = type(key)
            if kind is int:
                shape = self._shape
                if shape:
                    n = shape[0]
                    if -n <= key < n:
                        t = _new(Tensor)
                        t._table = self._table
                        t._dtype = self._dtype
                        t._shape = shape[1:]
                        t._var = self._var
                        t._offset = self._offset + (key + n if key < 0 else key) * self._strides[0]
                        t._strides = self._strides[1:]
                        t._ids = None
                        return t
            elif kind is tuple or kind is slice:
                view = self._index_ints_and_slices(key if kind is tuple else (key,))
                if view is not None:
                    return view
        return self._index_general(key)

    def _index_ints_and_slices(self, key: tuple) -> Optional["Tensor"]:
        """A strided view indexed by plain ints (in range) and slices only, or None when the
        key holds anything else (the general path then decides)."""
        shape, strides = self._shape, self._strides
        if len(key) > len(shape):
            return None
        offset = self._offset
        out_shape: List[int] = []
        out_strides: List[int] = []
        d = 0
        for k in key:
            kind = type(k)
            n = shape[d]
            s = strides[d]
            if kind is int:
                if not -n <= k < n:
                    return None
                offset += (k + n if k < 0 else k) * s
            elif kind is slice:
                try:
                    start, stop, step = k.indices(n)
                except (TypeError, ValueError):
                    return None  # a bound that is not an integer, a step of 0: the general path says so
                length = len(range(start, stop, step))
                out_shape.append(length)
                out_strides.append(s * step)
                if length:
                    offset += start * s
            else:
                return None
            d += 1
        return _strided_view(self._table, self._var, self._dtype, tuple(out_shape) + shape[d:], offset,
                             tuple(out_strides) + strides[d:])

    def _index_general(self, key) -> "Tensor":
        """numpy basic indexing, every key form and every error (see __getitem__)."""
        shape, strides, offset, np_key = views.basic_index(self._shape, self._strides if self._ids is None else None,
                                                           self._offset, key, self._describe)
        if self._ids is not None:
            return self._with_ids(self._ids[np_key])
        return self._like(shape, offset, strides)

    def index(self, indices: Sequence[int]) -> "Tensor":
        """``t.index([i, j])`` is ``t[i][j]``."""
        return self[tuple(as_indices(indices, "index: indices", "index"))]

    def _check_dim(self, dim: int, op: str, rank: Optional[int] = None) -> int:
        rank = self.rank if rank is None else rank
        dim = as_index(dim, f"{op}: dimension")
        if not 0 <= dim < rank:
            raise IndexError(f"{op}: dimension {dim} is out of range for {self._describe()}: valid dimensions are "
                             f"0..{rank - 1}" if rank else f"{op}: {self._describe()} has no dimensions")
        return dim

    def slice(self, begin: Union[int, Sequence[int]], end: Union[int, Sequence[int]], dim: int = 0) -> "Tensor":
        """Elements [begin, end) along ``dim``, keeping the rank; or, with lists,
        the box ``[begin[d], end[d])`` in every dimension d."""
        if type(begin) is int and type(end) is int and type(dim) is int and self._ids is None:
            shape = self._shape  # the hot path of graph building; _slice_general must agree with it
            if 0 <= dim < len(shape) and 0 <= begin <= end <= shape[dim]:
                if end == begin:
                    offset = self._offset
                else:
                    offset = self._offset + begin * self._strides[dim]
                t = _new(Tensor)
                t._table = self._table
                t._dtype = self._dtype
                t._shape = (end - begin,) + shape[1:] if dim == 0 else shape[:dim] + (end - begin,) + shape[dim + 1:]
                t._var = self._var
                t._offset = offset
                t._strides = self._strides
                t._ids = None
                return t
        elif type(begin) is int and type(end) is int and type(dim) is int and self._ids is not None:
            shape = self._shape  # an id view: its ids sliced (what _slice_general's indexing does)
            if 0 <= dim < len(shape) and 0 <= begin <= end <= shape[dim]:
                return Tensor._indexed(self._table, self._dtype, self._ids[(slice(None),) * dim + (slice(begin, end),)])
        return self._slice_general(begin, end, dim)

    def _slice_general(self, begin, end, dim: int = 0) -> "Tensor":
        """Every form of ``slice`` and every error (see slice)."""
        box = views.int_box(begin, end, self._shape)   # a box of plain ints (a vertex's window): in one step
        if box is not None:
            if self._ids is not None:
                return Tensor._indexed(self._table, self._dtype, self._ids[tuple(map(slice, begin, end))])
            return self._like(box, views.box_offset(self._offset, begin, end, self._strides), self._strides)
        if isinstance(begin, (list, tuple, np.ndarray)) or isinstance(end, (list, tuple, np.ndarray)):
            begin = as_indices(begin, "slice: begin (a list, as end is)", "slice begin")
            end = as_indices(end, "slice: end (a list, as begin is)", "slice end")
            if len(begin) != self.rank or len(end) != self.rank:
                raise IndexError(f"slice: begin {begin} and end {end} must both have one entry per dimension of "
                                 f"{self._describe()}")
            out = self
            for d, (b, e) in enumerate(zip(begin, end)):
                out = out.slice(b, e, d)
            return out
        dim = self._check_dim(dim, "slice")
        b, e = as_index(begin, "slice begin"), as_index(end, "slice end")
        n = self._shape[dim]
        if not 0 <= b <= e <= n:
            raise IndexError(f"slice [{b}, {e}) is out of range for dimension {dim} of {self._describe()}: "
                             f"need 0 <= begin <= end <= {n}")
        if self._ids is None:
            shape = self._shape[:dim] + (e - b,) + self._shape[dim + 1:]
            offset = self._offset + b * self._strides[dim] if e > b else self._offset
            return self._like(shape, offset, self._strides)
        key = [slice(None)] * self.rank
        key[dim] = slice(b, e)
        return self[tuple(key)]

    def slices(self, intervals: Sequence[Tuple[int, int]], dim: int = 0) -> List["Tensor"]:
        """One slice per (begin, end) interval along ``dim``."""
        pairs = list(intervals) if isinstance(intervals, (list, tuple, np.ndarray)) else None
        if dim == 0 and len(self._shape) == 1 and pairs is not None and id_slices.plain_pairs(pairs, self._shape[0]):
            # (every tile's regions of a flat view: graph building's hot path)
            return (id_slices.strided_slices if self._ids is None else id_slices.slices)(self, pairs, _strided_view)
        if pairs is None or not all(isinstance(k, (list, tuple, np.ndarray)) and len(k) == 2 for k in pairs):
            raise errors.TypeError(f"slices: intervals must be a list of (begin, end) pairs, found {found(intervals)}; "
                                   "e.g. t.slices([(0, 2), (2, 4)], dim)")
        return [self.slice(b, e, dim) for b, e in pairs]

    # -- shape transforms -------------------------------------------------------------------
    def reshape(self, shape: ShapeLike) -> "Tensor":
        """The same elements, in row-major order, with a new shape (one entry may be -1)."""
        if self._ids is None and (type(shape) is list or type(shape) is tuple):
            view = self._reshape_contiguous(shape)  # the common case, without numpy
            if view is not None:
                return view
        return self._reshape_general(shape)

    def _reshape_general(self, shape) -> "Tensor":
        """Every form of ``reshape`` and every error; the fast path must agree with it."""
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, (bool, np.bool_)):
            shape = (shape,)
        new_shape = as_indices(shape, "reshape: the shape", "reshape: dimension size")
        total = self.num_elements()
        if new_shape.count(-1) > 1:
            raise TensorCreationError(f"reshape of {self._describe()}: only one dimension may be -1, got {new_shape}")
        if -1 in new_shape:
            known = views.num_elements([n for n in new_shape if n != -1])
            if known == 0 or total % known:
                raise TensorCreationError(f"reshape of {self._describe()} to {new_shape}: "
                                          f"{total} elements do not divide into that shape")
            new_shape[new_shape.index(-1)] = total // known
        if any(n < 0 for n in new_shape) or views.num_elements(new_shape) != total:
            raise TensorCreationError(f"reshape of {self._describe()} ({total} elements) to {new_shape} "
                                      f"({views.num_elements(new_shape)} elements): element counts must match")
        new_shape_t = tuple(new_shape)
        if self._ids is None:
            strides = views.reshape_strides(self._shape, self._strides, new_shape_t)
            if strides is not None:
                return self._like(new_shape_t, self._offset, strides)
        return self._with_ids(self._id_array().reshape(new_shape_t))

    def _reshape_contiguous(self, shape) -> Optional["Tensor"]:
        """A row-major contiguous strided view reshaped to ``shape`` (plain non-negative ints,
        same element count), or None for anything else."""
        total = 1
        for n in self._shape:
            total *= n
        count = 1
        for n in shape:
            if type(n) is not int or n < 0:
                return None
            count *= n
        if count != total or self._strides != views.row_major_strides(self._shape):
            return None
        new_shape = tuple(shape)
        return _strided_view(self._table, self._var, self._dtype, new_shape, self._offset,
                             views.row_major_strides(new_shape))

    def reshape_partial(self, begin_dim: int, end_dim: int, new_dims: Sequence[int]) -> "Tensor":
        """Reshape only dimensions [begin_dim, end_dim)."""
        begin_dim = as_index(begin_dim, "reshape_partial: begin_dim")
        end_dim = as_index(end_dim, "reshape_partial: end_dim")
        new_dims = as_indices(new_dims, "reshape_partial: new_dims", "reshape_partial: dimension size")
        if not 0 <= begin_dim <= end_dim <= self.rank:
            raise IndexError(f"reshape_partial: [{begin_dim}, {end_dim}) is not a dimension range of "
                             f"{self._describe()}")
        return self.reshape(self._shape[:begin_dim] + tuple(new_dims) + self._shape[end_dim:])

    def flatten(self, begin_dim: Optional[int] = None, end_dim: Optional[int] = None) -> "Tensor":
        """All elements as 1-D, or dimensions [begin_dim, end_dim) merged into one."""
        if begin_dim is None:
            return self.reshape([self.num_elements()])
        begin_dim = as_index(begin_dim, "flatten: begin_dim")
        end_dim = self.rank if end_dim is None else as_index(end_dim, "flatten: end_dim")
        if not 0 <= begin_dim < end_dim <= self.rank:
            raise IndexError(f"flatten: [{begin_dim}, {end_dim}) is not a non-empty dimension range of "
                             f"{self._describe()}")
        merged = views.num_elements(self._shape[begin_dim:end_dim])
        return self.reshape(self._shape[:begin_dim] + (merged,) + self._shape[end_dim:])

    def dim_shuffle(self, permutation: Sequence[int]) -> "Tensor":
        """Result dimension i is source dimension ``permutation[i]``."""
        shape = self._shape
        if self._ids is None and (type(permutation) is list or type(permutation) is tuple) \
                and len(permutation) == len(shape):
            seen = 0  # a bit per dimension: a permutation of plain ints sets each one once
            for p in permutation:
                if type(p) is not int or not 0 <= p < len(shape) or seen >> p & 1:
                    break
                seen |= 1 << p
            else:
                return _strided_view(self._table, self._var, self._dtype, tuple(map(shape.__getitem__, permutation)),
                                     self._offset, tuple(map(self._strides.__getitem__, permutation)))
        return self._dim_shuffle_general(permutation)

    def _dim_shuffle_general(self, permutation: Sequence[int]) -> "Tensor":
        """Every form of ``dim_shuffle`` and every error; the fast path must agree with it."""
        perm = as_indices(permutation, "dim_shuffle: the permutation", "dim_shuffle: permutation entry")
        if sorted(perm) != list(range(self.rank)):
            raise IndexError(f"dim_shuffle: {perm} is not a permutation of the {self.rank} dimensions of "
                             f"{self._describe()}")
        if self._ids is not None:
            return self._with_ids(self._ids.transpose(perm))
        return self._like(tuple(self._shape[p] for p in perm), self._offset, tuple(self._strides[p] for p in perm))

    def dim_shuffle_partial(self, source: Sequence[int], destination: Sequence[int]) -> "Tensor":
        """Move dimensions ``source[i]`` to positions ``destination[i]``; others keep their order."""
        src = [self._check_dim(d, "dim_shuffle_partial") for d in
               as_indices(source, "dim_shuffle_partial: source", "dim_shuffle_partial: dimension")]
        dst = [self._check_dim(d, "dim_shuffle_partial") for d in
               as_indices(destination, "dim_shuffle_partial: destination", "dim_shuffle_partial: dimension")]
        if len(src) != len(dst) or len(set(src)) != len(src) or len(set(dst)) != len(dst):
            raise IndexError(f"dim_shuffle_partial: source {list(source)} and destination {list(destination)} must "
                             "be equal-length lists of distinct dimensions")
        result: List[Optional[int]] = [None] * self.rank
        for s, d in zip(src, dst):
            result[d] = s
        rest = iter(d for d in range(self.rank) if d not in src)
        return self.dim_shuffle([r if r is not None else next(rest) for r in result])

    def dim_roll(self, dim: int, new_pos: int = 0) -> "Tensor":
        """Move dimension ``dim`` to position ``new_pos`` (np.moveaxis)."""
        dim = self._check_dim(dim, "dim_roll")
        new_pos = self._check_dim(new_pos, "dim_roll")
        order = [d for d in range(self.rank) if d != dim]
        order.insert(new_pos, dim)
        return self.dim_shuffle(order)

    def transpose(self) -> "Tensor":
        """Swap the two dimensions of a rank-2 tensor (use dim_shuffle for other ranks)."""
        if self.rank != 2:
            raise TensorCreationError(f"transpose needs a rank-2 tensor, {self._describe()} has rank {self.rank}: "
                                      "use dim_shuffle(permutation) instead")
        if self._ids is None:
            shape, strides = self._shape, self._strides
            return _strided_view(self._table, self._var, self._dtype, (shape[1], shape[0]), self._offset,
                                 (strides[1], strides[0]))
        return self.dim_shuffle([1, 0])

    def expand(self, dims: Sequence[int]) -> "Tensor":
        """Insert a singleton dimension before each listed source dimension (``rank`` means
        at the end); repeat an index to insert several there."""
        dims = as_indices(dims, "expand: dims", "expand: dimension")
        for d in dims:
            if not 0 <= d <= self.rank:
                raise IndexError(f"expand: position {d} is out of range for {self._describe()}: need 0..{self.rank}")
        if self._ids is not None:
            new_shape, _ = views.expanded_shape(self._shape, (0,) * self.rank, dims)
            return self._with_ids(self._ids.reshape(new_shape))
        shape, strides = views.expanded_shape(self._shape, self._strides, dims)
        return self._like(shape, self._offset, strides)

    def squeeze(self, dims: Optional[Sequence[int]] = None) -> "Tensor":
        """Remove the listed singleton dimensions (all of them when ``dims`` is None)."""
        if dims is None:
            drop = {d for d, n in enumerate(self._shape) if n == 1}
        else:
            drop = {self._check_dim(d, "squeeze") for d in as_indices(dims, "squeeze: dims", "squeeze: dimension")}
            for d in sorted(drop):
                if self._shape[d] != 1:
                    raise TensorCreationError(f"squeeze: dimension {d} of {self._describe()} has size "
                                              f"{self._shape[d]}, not 1")
        keep = [d for d in range(self.rank) if d not in drop]
        shape = tuple(self._shape[d] for d in keep)
        if self._ids is not None:
            return self._with_ids(self._ids.reshape(shape))
        return self._like(shape, self._offset, tuple(self._strides[d] for d in keep))

    def broadcast(self, n: int, dim: int) -> "Tensor":
        """``n`` copies of the tensor concatenated along ``dim``."""
        n = as_index(n, "broadcast: count")
        dim = self._check_dim(dim, "broadcast")
        if n < 0:
            raise TensorCreationError(f"broadcast: count must be >= 0, found {n}")
        if self._ids is None and (self._shape[dim] == 1 or n == 1):
            shape = list(self._shape)
            strides = list(self._strides)
            if self._shape[dim] == 1:
                shape[dim], strides[dim] = n, 0
            return self._like(tuple(shape), self._offset, tuple(strides))
        what = f"broadcast of {self._describe()} {n} times"
        if not n or not self.num_elements():  # no ids, only a shape (and numpy's shapes stop short of 2**63)
            whole = self._shape[:dim] + (self._shape[dim] * n,) + self._shape[dim + 1:]
            return self._with_ids(views.listed(lambda: np.empty(whole, np.int64), 0, what))
        return self._with_ids(views.listed(lambda: np.concatenate([self._id_array()] * n, axis=dim),  # listed() checks
                                           self.num_elements() * n, what))

    def upsample(self, scale: int, dim: int) -> "Tensor":
        """Each element repeated ``scale`` times along ``dim`` (np.repeat)."""
        scale = as_index(scale, "upsample: scale")
        dim = self._check_dim(dim, "upsample")
        if scale < 0:
            raise TensorCreationError(f"upsample: scale must be >= 0, found {scale}")
        if self._ids is None and scale == 1:
            return self
        if self._ids is None and self._shape[dim] == 1:
            return self.broadcast(scale, dim)
        return self._with_ids(views.listed(lambda: np.repeat(self._id_array(), scale, axis=dim),
                                           self.num_elements() * scale,
                                           f"upsample of {self._describe()} by {scale} along dimension {dim}"))

    def reverse(self, dim: int) -> "Tensor":
        """The elements along ``dim`` in reverse order."""
        dim = self._check_dim(dim, "reverse")
        key = [slice(None)] * self.rank
        key[dim] = slice(None, None, -1)
        return self[tuple(key)]

    def subsample(self, stride: int, dim: int) -> "Tensor":
        """Every ``stride``-th element along ``dim``, starting with the first."""
        stride = as_index(stride, "subsample: stride")
        dim = self._check_dim(dim, "subsample")
        if stride < 1:
            raise TensorCreationError(f"subsample: stride must be >= 1, found {stride}")
        key = [slice(None)] * self.rank
        key[dim] = slice(None, None, stride)
        return self[tuple(key)]

    def reinterpret(self, dtype: TypeLike) -> "Tensor":
        """The same elements viewed as another type of the same size."""
        new = as_type(dtype)
        if new.name == "QUARTER" and self._dtype != new:
            raise TensorCreationError(f"reinterpret of {self._describe()} as QUARTER: a QUARTER tensor carries its "
                                      "metadata; clone it as QUARTER with metadata and Copy the bytes into "
                                      "clone.reinterpret(UNSIGNED_CHAR), as Poplar has it")
        if new.size != self._dtype.size:
            raise TensorCreationError(f"reinterpret of {self._describe()} from {self._dtype.name} "
                                      f"({self._dtype.size} bytes) to {new.name} ({new.size} bytes): "
                                      "the element sizes must be equal")
        if self._ids is not None:
            return Tensor._indexed(self._table, new, self._ids)
        return Tensor._strided(self._table, self._var, new, self._shape, self._offset, self._strides)

    def same_elements(self, other: "Tensor") -> bool:
        """Same shape, same elements in the same order (Poplar's ``operator==``)."""
        if not isinstance(other, Tensor):
            raise errors.TypeError(f"same_elements needs a Tensor, found {type(other).__name__}")
        return (self._table is other._table and self._shape == other._shape
                and bool(np.array_equal(self._element_ids(), other._element_ids())))


def _strided_view(table: VariableTable, var: Optional[Variable], dtype: Type, shape: Shape, offset: int,
                  strides: Shape) -> Tensor:
    """A strided view (object.__new__ and slot stores: Tensor() itself refuses users); var is never None."""
    t = _new(Tensor)
    t._table = table
    t._dtype = dtype
    t._shape = shape
    t._var = var
    t._offset, t._strides = offset, strides
    t._ids = None
    return t


Tensor._strided = staticmethod(_strided_view)
