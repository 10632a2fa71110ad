"""ferrox: an array framework for machine learning with MLX's API.

``import ferrox as fx`` gives the namespace of ``mlx.core``: arrays, dtypes,
ops, devices and streams, memory accounting. See README.md for the status of
each API group.
"""

from ferrox import _core
from ferrox._core import *  # noqa: F401,F403  (the mlx.core namespace)
from ferrox._core import array, fast, random, where  # noqa: F401  (explicit for readers and linters)
from ferrox import cuda, metal  # noqa: F401
from ferrox._compile import async_eval, compile, disable_compile, enable_compile  # noqa: F401
from ferrox._autodiff import checkpoint, custom_function, grad, jvp, value_and_grad, vjp, vmap  # noqa: F401
from ferrox._export import FunctionExporter, export_function, export_to_dot, exporter, import_function  # noqa: F401

del cuda_is_available, cuda_device_name, cuda_set_allow_tf32  # noqa: F821  (exposed in ferrox.cuda)

__version__ = "0.1.0"
