"""Functions PopLibs' Python vertices call from ``compute``: the translator inlines them
(docs/python_vertices.md, "Helper functions"), so a family of vertices shares its code
here instead of repeating it in each class.

A MultiVertex worker takes one contiguous chunk of its region: the simulated cycles
come from the vertex's estimator, so the split only decides host speed, and contiguous
chunks let the compiled loop run unchecked and vectorised (interleaved elements, as
PopLibs' assembly takes them, would not).

``named_vertex_class`` is for the factories, not for ``compute``: it names a class body
that serves two templates (a max and a min, a slice and its update) after each.
"""

__all__ = ["chunk_begin", "chunk_end", "named_vertex_class"]


def chunk_begin(n, worker_id, workers):
    """The first element of worker ``worker_id``'s chunk of ``n``."""
    return worker_id * ((n + workers - 1) // workers)


def chunk_end(n, worker_id, workers):
    """One past the last element of worker ``worker_id``'s chunk of ``n``."""
    return min(n, (worker_id + 1) * ((n + workers - 1) // workers))


def named_vertex_class(cls, name: str):
    """``cls``, renamed ``name`` (``__name__`` and ``__qualname__``): one class body made for
    two templates is named after the template it was made for, as errors name it."""
    cls.__name__ = cls.__qualname__ = name
    return cls
