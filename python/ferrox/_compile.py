"""``compile`` with MLX's signature: ``compile(fun, inputs=None,
outputs=None, shapeless=False)``, and ``disable_compile`` /
``enable_compile``.

A compiled function is traced once per signature: the shapes and dtypes of
its array arguments (numbers of dimensions when ``shapeless``), the
structure of its arguments (nested lists, tuples and dicts) and the values
of their other leaves (``None``, bools, ints, floats, strings), which are
constants of the trace. The Rust core records, simplifies and fuses the
graph and replays it on each call.

``inputs`` and ``outputs`` capture state the function reads and writes
besides its arguments (a model's parameters, an optimizer's state): the
arrays in ``inputs`` are passed to the trace as extra arguments, and the
arrays the function leaves in ``outputs`` are extra results, written back
into those containers after each call, so a whole training step compiles.
"""

import functools
from typing import Any, Callable, List, Optional, Tuple

from ferrox import _core
from ferrox.utils import _children, _is_node

array = _core.array

__all__ = ["async_eval", "compile", "disable_compile", "enable_compile"]

disable_compile = _core.disable_compile
enable_compile = _core.enable_compile


def async_eval(*args: Any) -> None:
    """Starts evaluating the arrays in ``args`` (any nesting of lists,
    tuples and dicts), as MLX's ``async_eval``, and returns without waiting:
    CPU work runs on a worker thread and GPU work is queued on its streams.
    Reading a result, ``eval`` and ``synchronize`` wait for it.

    Args:
        *args (array or tree of arrays): The arrays to evaluate.
    """
    _core.async_eval(*args)


_CONSTANTS = (type(None), bool, int, float, str)


class _Slot:
    """Where an array argument goes in a template."""


_SLOT = _Slot()


class _Node:
    """A container in a template: the original object and its children's
    templates by key."""

    __slots__ = ("original", "children")

    def __init__(self, original: Any, children: List[Tuple[Any, Any]]):
        self.original = original
        self.children = children


def _split(tree: Any, parts: List[str], arrays: List[array], what: str, ancestors: Tuple[int, ...] = ()) -> Any:
    """The template of ``tree`` (its arrays replaced by ``_SLOT``, collected
    in ``arrays``), appending a description of its structure and constants
    to ``parts``."""
    if isinstance(tree, array):
        arrays.append(tree)
        parts.append("a")
        return _SLOT
    if isinstance(tree, _CONSTANTS):
        parts.append(f"{type(tree).__name__}:{tree!r}")
        return tree
    if not _is_node(tree):
        raise ValueError(
            f"[compile] Function {what} must be trees of arrays or constants (floats, ints, or strings), "
            f"but received type {type(tree).__module__}.{type(tree).__qualname__}."
        )
    if id(tree) in ancestors or len(ancestors) >= 256:
        raise ValueError("[compile] The argument contains a reference to itself or is nested too deeply.")
    kind = type(tree)
    parts.append(f"{kind.__qualname__}(")
    inner = ancestors + (id(tree),)
    children = []
    for key, child in _children(tree):
        if isinstance(tree, dict):
            parts.append(f"{key!r}:")
        children.append((key, _split(child, parts, arrays, what, inner)))
    parts.append(")")
    return _Node(tree, children)


def _join(template: Any, arrays: List[array], restore: List[Tuple[Any, Any, Any]]) -> Any:
    """``template`` with its slots filled by ``arrays`` in order: containers
    are rebuilt, except dict subclasses (an ``nn.Module``), which are
    filled in place so the function sees the object it was given (each
    replaced entry goes to ``restore``)."""
    return _fill(template, iter(arrays), restore)


def _fill(t: Any, it: Any, restore: List[Tuple[Any, Any, Any]]) -> Any:
    """``_join`` of one template node. (A module-level function: a nested
    recursive closure would form a reference cycle keeping the arrays alive
    until the garbage collector runs.)"""
    if t is _SLOT:
        return next(it)
    if not isinstance(t, _Node):
        return t
    original, children = t.original, t.children
    if isinstance(original, dict) and type(original) is not dict:
        for key, child in children:
            restore.append((original, key, original[key]))
            original[key] = _fill(child, it, restore)
        return original
    values = [_fill(child, it, restore) for _, child in children]
    if isinstance(original, dict):
        return dict(zip(original.keys(), values))
    if hasattr(original, "_fields"):
        return type(original)(*values)
    return type(original)(values)


# The arrays of a state tree in order (lists, tuples and dicts, subclasses
# such as nn.Module included; other leaves are ignored), and their in-place
# replacement: ``_fill_state(tree, values, replaced=None)`` puts the list
# ``values`` in place of those arrays, appending ``(container, key, old)``
# for each to ``replaced`` when given. Both run on every call of a compiled
# function with captured state (a model and its optimizer: hundreds of
# arrays), so they are written in Rust.
_state_arrays = _core._state_arrays
_fill_state = _core._fill_state


class _CompiledFunction:
    """A function compiled by :func:`compile`."""

    def __init__(self, fun: Callable, inputs: Any, outputs: Any, shapeless: bool):
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._inputs = inputs
        self._outputs = outputs
        self._shapeless = shapeless
        self._core = _core._Compiled(self._trace, shapeless)
        self._call = None
        # The output template and output count of each trace, by the
        # core's trace id; a new trace's entry waits in ``_traced`` until
        # the core call that made it returns the id.
        self._results = {}
        self._traced = None

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        # As a method: the instance is the first argument.
        return self if instance is None else functools.partial(self, instance)

    def _prepare(self, args: tuple, kwargs: dict) -> Tuple[List[array], str]:
        """The flat arrays of a call (arguments, then captured state) and
        its key; records what a trace of it needs in ``self._call`` (the
        caller clears it)."""
        parts: List[str] = []
        arg_arrays: List[array] = []
        template = _split((args, kwargs), parts, arg_arrays, "arguments")
        state = _state_arrays(self._inputs)
        key = f"{''.join(parts)}|{len(arg_arrays)}|{len(state)}"
        self._call = (template, len(arg_arrays))
        return arg_arrays + state, key

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not _core._compile_enabled():
            return self._fun(*args, **kwargs)
        flat_in, key = self._prepare(args, kwargs)
        self._traced = None  # left over from a call whose trace failed
        try:
            flat, trace = self._core(flat_in, key)
        finally:
            self._call = None
        out_template, n_out = self._results_of(trace)
        result = _join(out_template, flat[:n_out], [])
        if self._outputs is not None:
            _fill_state(self._outputs, flat[n_out:])
        return result

    def _results_of(self, trace: int) -> Tuple[Any, int]:
        """The output template and output count of trace ``trace`` (filed
        now if the core call that returned the id made the trace)."""
        if self._traced is not None:
            self._results[trace], self._traced = self._traced, None
        return self._results[trace]

    def _trace(self, placeholders: List[array]) -> List[array]:
        """Runs the function on the core's placeholders (a new trace)."""
        template, n_args = self._call
        restore: List[Tuple[Any, Any, Any]] = []
        args, kwargs = _join(template, placeholders[:n_args], restore)
        saved_outputs = _state_arrays(self._outputs)
        # The function may add entries to the state (an optimizer's first
        # update); only the replaced ones are put back afterwards.
        _fill_state(self._inputs, placeholders[n_args:], restore)
        done = False
        try:
            out = self._fun(*args, **kwargs)
            parts: List[str] = []
            out_arrays: List[array] = []
            out_template = _split(out, parts, out_arrays, "outputs")
            state_out = _state_arrays(self._outputs)
            done = True
        finally:
            for container, key, value in reversed(restore):
                container[key] = value
            if not done and len(_state_arrays(self._outputs)) == len(saved_outputs):
                _fill_state(self._outputs, saved_outputs)
        self._traced = (out_template, len(out_arrays))
        return out_arrays + state_out

    def cache_info(self) -> Tuple[int, int, int]:
        """``(hits, misses, traces)`` of the trace cache: calls that replayed
        a trace, calls that traced, and traces held."""
        return self._core.cache_info()

    def graph_info(self) -> Tuple[int, int, int]:
        """``(captured, refused, launches)`` of graph replay: traces whose
        kernels were captured into a CUDA graph, traces whose capture failed
        (they run kernel by kernel), and calls that replayed a graph."""
        return self._core.graph_info()

    def clear_cache(self) -> None:
        """Drops every trace (the next call traces again)."""
        self._core.clear_cache()
        self._results.clear()

    def graph(self, *args: Any, fused: bool = True, **kwargs: Any) -> List[str]:
        """The primitives a call with these arguments replays, in order
        (fused elementwise groups appear as ``Compiled[...]``); traces if
        needed."""
        flat_in, key = self._prepare(args, kwargs)
        self._traced = None
        try:
            graph, trace = self._core.graph(flat_in, key, fused)
        finally:
            self._call = None
        self._results_of(trace)
        return graph


def compile(
    fun: Optional[Callable] = None,
    inputs: Optional[Any] = None,
    outputs: Optional[Any] = None,
    shapeless: bool = False,
) -> Callable:
    """Returns a compiled version of ``fun``: traced once per signature,
    simplified (common subexpressions, constants, dead code), with chains of
    elementwise ops fused into one kernel, cached and replayed. On the GPU,
    a function of many small kernels is captured into a CUDA graph on its
    second call and replayed with one launch from then on (the environment
    variable ``FERROX_GRAPH_REPLAY`` = ``auto``, ``always`` or ``never``
    says when).

    Args:
        fun: the function (arrays or trees of arrays and constants in,
            arrays or trees of arrays out). Used as a decorator with no
            arguments, ``@compile`` works too.
        inputs: a tree whose arrays the function reads besides its
            arguments (``[model.state, optimizer.state]``).
        outputs: a tree whose arrays the function replaces; they are
            written back after each call.
        shapeless: reuse one trace for inputs of any shape with the traced
            numbers of dimensions (functions whose graph depends on the
            shapes raise when traced).

    Returns:
        callable: The compiled function (or, with ``fun`` None, a decorator making one).
    """
    if fun is None:
        return functools.partial(compile, inputs=inputs, outputs=outputs, shapeless=shapeless)
    return _CompiledFunction(fun, inputs, outputs, shapeless)
