"""ferrox: an array framework for machine learning with MLX's API.

``import ferrox as fx`` gives the namespace of ``mlx.core``: arrays, dtypes,
ops, devices and streams, memory accounting. See README.md for the status of
each API group.
"""

from ferrox import _core
from ferrox._core import *  # noqa: F401,F403  (the mlx.core namespace)
from ferrox._core import array, fast, fft, linalg, random, where  # noqa: F401  (explicit for readers and linters)
from ferrox import cuda, distributed, metal  # noqa: F401
from ferrox._compile import async_eval, compile, disable_compile, enable_compile  # noqa: F401
from ferrox._autodiff import checkpoint, custom_function, grad, jvp, value_and_grad, vjp, vmap  # noqa: F401
from ferrox._export import FunctionExporter, export_function, export_to_dot, exporter, import_function  # noqa: F401

matrix_norm = linalg.norm  # MLX's top-level alias

del cuda_is_available, cuda_device_name, cuda_set_allow_tf32, cuda_libraries  # noqa: F821  (exposed in ferrox.cuda)


def _drop_private_core_names(namespace: dict) -> None:
    """PyO3 lists every name of ``_core`` in its ``__all__``, private
    helpers included: keep those out of ``dir(ferrox)``."""
    for name in _core.__all__:
        if name.startswith("_") and not name.startswith("__"):
            namespace.pop(name, None)


_drop_private_core_names(globals())
del _drop_private_core_names

__version__ = "0.1.0"
