"""Exporting functions to files and importing them (MLX's ``export_function``,
``exporter``, ``import_function`` and ``export_to_dot``).

The graph recording, the file format and the checks on import are in Rust
(``crates/ferrox/src/export``); this module gives them MLX's calling
conventions: example inputs as positional and keyword arrays, or as one
tuple/list of arrays and/or one dict of arrays.
"""

import os
from typing import Callable, Optional, Tuple, Union

from ferrox import _core
from ferrox._core import array


def _inputs(args, kwargs, prefix):
    """MLX's accepted argument forms, as (list of arrays, dict of arrays)."""

    def fail():
        raise ValueError(
            f"{prefix} Inputs can either be a variable number of positional and keyword "
            "arrays or a single tuple and/or dictionary of arrays."
        )

    def array_list(obj):
        if not isinstance(obj, (list, tuple)) or not all(isinstance(a, array) for a in obj):
            fail()
        return list(obj)

    def array_dict(obj):
        if not isinstance(obj, dict) or not all(isinstance(k, str) and isinstance(v, array) for k, v in obj.items()):
            fail()
        return dict(obj)

    if not args:
        return [], array_dict(kwargs)
    if isinstance(args[0], array):
        return array_list(args), array_dict(kwargs)
    if kwargs or len(args) > 2:
        fail()
    if len(args) == 1:
        if isinstance(args[0], dict):
            return [], array_dict(args[0])
        return array_list(args[0]), {}
    return array_list(args[0]), array_dict(args[1])


def _flat_outputs(fun):
    """``fun`` called as the core calls it, its outputs as a list of arrays."""

    def call(args, kwargs):
        out = fun(*args, **kwargs)
        if isinstance(out, array):
            return [out]
        if isinstance(out, (list, tuple)) and all(isinstance(o, array) for o in out):
            return list(out)
        raise ValueError("[export_function] Outputs can be either a single array, a tuple, or a list of arrays.")

    return call


def _path(file, op):
    if isinstance(file, (str, os.PathLike)):
        return os.fspath(file)
    raise TypeError(f"[{op}] The file must be a path (str or os.PathLike).")


def export_function(
    file_or_callback: Union[str, os.PathLike, Callable],
    fun: Callable,
    *args,
    shapeless: bool = False,
    metadata: Optional[str] = None,
    **kwargs,
) -> None:
    """Export a function to a file, or describe its trace to a callback.

    Example inputs give the shapes and dtypes the function is traced for:
    positional and keyword arrays, or one tuple of arrays and/or one dict of
    arrays. With ``shapeless=True`` the imported function accepts inputs of
    other shapes (same dtypes and numbers of dimensions) where its graph
    allows. ``metadata`` (a string) is stored alongside, for files only.

    Args:
        file_or_callback (str or PathLike or callable): File to write, or a callback receiving the traced graph.
        fun (callable): Function of arrays to export.
        *args: Example positional arguments (arrays) to trace with.
        shapeless (bool, optional): Allow calls with other shapes.
        metadata (str, optional): Text stored with the function.
        **kwargs: Example keyword arguments (arrays) to trace with.
    """
    a, k = _inputs(args, kwargs, "[export_function]")
    if callable(file_or_callback) and not isinstance(file_or_callback, (str, os.PathLike)):
        if metadata:
            raise ValueError(
                "[export_function] The metadata argument is only supported when exporting to a file, "
                "not when using a callback."
            )
        for event in _core._trace_events(_flat_outputs(fun), a, k, shapeless):
            file_or_callback(event)
        return
    path = _path(file_or_callback, "export_function")
    exporter_ = _core._Exporter(path, _flat_outputs(fun), shapeless, metadata or "")
    try:
        exporter_.trace(a, k)
    finally:
        exporter_.close()


class FunctionExporter:
    """Exports several traces of one function to one file; constants shared
    by the traces are stored once. Make one with :func:`exporter`.

    Args:
        file (str or PathLike): File to write.
        fun (callable): Function of arrays to export.
        shapeless (bool): Allow calls with other shapes.
        metadata (str or None): Text stored with the function.
    """

    def __init__(self, file, fun, shapeless, metadata):
        self._core = _core._Exporter(_path(file, "exporter"), _flat_outputs(fun), shapeless, metadata or "")

    def __call__(self, *args, **kwargs):
        """Trace the function for these example inputs."""
        if self._core.closed:
            raise RuntimeError("[export_function] Attempting to write after exporting is closed.")
        a, k = _inputs(args, kwargs, "[export_function]")
        self._core.trace(a, k)

    def close(self):
        """Write the file; later traces raise RuntimeError."""
        self._core.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type=None, exc_value=None, traceback=None):
        self.close()


def exporter(
    file: Union[str, os.PathLike], fun: Callable, *, shapeless: bool = False, metadata: Optional[str] = None
) -> "FunctionExporter":
    """A context manager that exports several traces of ``fun`` to ``file``.

    Args:
        file (str or PathLike): File to write.
        fun (callable): Function of arrays to export.
        shapeless (bool, optional): Allow calls with other shapes.
        metadata (str, optional): Text stored with the function.

    Returns:
        FunctionExporter: Call it with example arguments to add a trace; close it (or leave its ``with`` block) to write the file.
    """
    return FunctionExporter(file, fun, shapeless, metadata)


def import_function(
    file: Union[str, os.PathLike], return_metadata: bool = False
) -> Union[Callable, Tuple[Callable, str]]:
    """Import a function from a file written by :func:`export_function`.

    The imported function takes the arguments in the forms
    :func:`export_function` accepts and always returns a tuple of arrays.
    With ``return_metadata=True`` returns ``(function, metadata)``.

    Args:
        file (str or PathLike): File written by ``export_function``.
        return_metadata (bool, optional): Also return the stored metadata.

    Returns:
        callable or tuple(callable, str): The imported function (and its metadata).
    """
    imported = _core._import_function(_path(file, "import_function"))

    def call(*args, **kwargs):
        a, k = _inputs(args, kwargs, "[import_function::call]")
        return imported.call(a, k)

    call.__doc__ = "A function imported from " + os.fspath(file) + "; returns a tuple of arrays."
    if return_metadata:
        return call, imported.metadata
    return call


def export_to_dot(file, *args, **kwargs) -> None:
    """Write the graph behind the arrays ``args`` (and ``kwargs``, whose keys
    name their arrays) to ``file`` (a path or a writable text file) in
    Graphviz's DOT language.

    Args:
        file (str or PathLike or file object): Where to write the Graphviz text.
        *args: Arrays whose graphs to draw.
        **kwargs: Arrays to draw, labeled with their names.
    """
    outputs, stack, seen = [], [kwargs, list(args)], set()
    while stack:  # depth-first, without recursion (trees may be deep)
        tree = stack.pop()
        if isinstance(tree, array):
            outputs.append(tree)
        elif isinstance(tree, (list, tuple, dict)):
            if id(tree) in seen:
                continue  # a container met twice (shared, or holding itself) is walked once
            seen.add(id(tree))
            stack.extend(reversed(list(tree.values() if isinstance(tree, dict) else tree)))
        else:
            raise ValueError("[tree_flatten] The argument should contain only arrays")
    names = {k: v for k, v in kwargs.items() if isinstance(v, array)}
    text = _core._export_to_dot(outputs, names)
    if isinstance(file, (str, os.PathLike)):
        with open(file, "w") as f:
            f.write(text)
    elif hasattr(file, "write"):
        file.write(text)
    else:
        raise ValueError("[export_to_dot] Accepts file-like objects or strings to be used as filenames.")
