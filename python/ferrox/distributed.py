"""Communication between processes (``ferrox.distributed``), with the API of
``mlx.core.distributed``.

ferrox has no multi-process backend yet: :func:`init` gives the group of
this one process (size 1), :func:`is_available` is False, and the
collectives behave as MLX's do on a group of one (they return their input;
``send`` and ``recv`` raise ValueError). Code written for several processes
therefore runs unchanged in one.
"""

import ferrox as fx

__all__ = [
    "Group", "is_available", "init", "all_sum", "all_max", "all_min", "all_gather", "sum_scatter",
    "send", "recv", "recv_like",
]  # fmt: skip

_BACKENDS = ("any", "mpi", "nccl", "jaccl", "ring")


class Group:
    """A group of independent ferrox processes that can communicate.

    Groups come from :func:`init` (and :meth:`split`); the only group ferrox
    makes today is the group of this one process.

    Args:
        *args: Refused: groups come from ``init``.
        **kwargs: Refused.
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("ferrox.distributed.Group: no constructor defined; use ferrox.distributed.init().")

    @classmethod
    def _singleton(cls) -> "Group":
        group = object.__new__(cls)
        group._rank, group._size = 0, 1
        return group

    def rank(self) -> int:
        """Get the rank of this process.

        Returns:
            int: The rank of this process in the group (0 here).
        """
        return self._rank

    def size(self) -> int:
        """Get the size of the group.

        Returns:
            int: The number of processes in the group (1 here).
        """
        return self._size

    def split(self, color: int, key: int = -1) -> "Group":
        """Split the group into subgroups based on the provided color.

        Args:
            color (int): A value to group processes into subgroups.
            key (int, optional): A key to order the ranks in the new group;
              negative keeps the rank in this group. Default: ``-1``.

        Returns:
            Group: The subgroup of this process. A group of one process cannot
            be split, so this raises RuntimeError, as in MLX.
        """
        raise RuntimeError("Cannot split the distributed group further.")

    def __repr__(self) -> str:
        return f"Group(rank={self._rank}, size={self._size})"


def is_available(backend: str = "any") -> bool:
    """Check if a communication backend is available.

    Args:
        backend (str, optional): The backend to check: ``"any"``, ``"mpi"``,
          ``"nccl"``, ``"jaccl"`` or ``"ring"``. Default: ``"any"``.

    Returns:
        bool: Whether the backend can be used: always False, since ferrox has
        no multi-process backend yet.
    """
    return False


def init(strict: bool = False, backend: str = "any", *, all_gather_factory=None) -> Group:
    """Initialize the communication backend and create the global group.

    Args:
        strict (bool, optional): If False, return the group of this one
          process when no backend is available; if True, raise RuntimeError
          instead. Default: ``False``.
        backend (str, optional): Which backend to initialize: ``"any"``,
          ``"mpi"``, ``"nccl"``, ``"jaccl"`` or ``"ring"``. Default: ``"any"``.
        all_gather_factory (Callable, optional): Used only by MLX's
          ``jaccl`` backend; accepted and ignored. Default: ``None``.

    Returns:
        Group: The group of all launched processes (here this one process).
    """
    if backend not in _BACKENDS:
        raise ValueError(
            "[distributed] The only valid values for backend are 'any', 'mpi', 'nccl', 'jaccl' and 'ring' "
            f"but '{backend}' was provided."
        )
    if strict:
        if backend == "any":
            raise RuntimeError("[distributed] Couldn't initialize any backend (ferrox has no multi-process backend yet).")
        raise RuntimeError(f"[distributed] Cannot initialize the {backend} backend: ferrox has no multi-process backend yet.")
    return _WORLD


_WORLD = Group._singleton()


def _group(op: str, group: Group | None) -> Group:
    if group is None:
        return _WORLD
    if not isinstance(group, Group):
        raise TypeError(f"[{op}] group must be a ferrox.distributed.Group or None, got {type(group).__name__}.")
    return group


def _array(op: str, x) -> fx.array:
    if isinstance(x, (fx.array, bool, int, float, complex)):
        return fx.asarray(x)
    raise ValueError(f"[{op}] Invalid type {type(x).__name__} received in array initialization.")


def _identity(op: str, x, group: Group | None) -> fx.array:
    _group(op, group)
    return _array(op, x)


def all_sum(x: fx.array, *, group: Group | None = None, stream=None) -> fx.array:
    """All-reduce sum: the sum of ``x`` over every process of the group.

    Args:
        x (array): Input array.
        group (Group, optional): The group of processes; the global group if
          ``None``. Default: ``None``.
        stream (Stream, optional): Stream or device to run on. Default: ``None``.

    Returns:
        array: The sum of all ``x`` arrays (``x`` itself in a group of one).
    """
    return _identity("all_sum", x, group)


def all_max(x: fx.array, *, group: Group | None = None, stream=None) -> fx.array:
    """All-reduce max: the element-wise maximum of ``x`` over the group.

    Args:
        x (array): Input array.
        group (Group, optional): The group of processes; the global group if
          ``None``. Default: ``None``.
        stream (Stream, optional): Stream or device to run on. Default: ``None``.

    Returns:
        array: The maximum of all ``x`` arrays (``x`` itself in a group of one).
    """
    return _identity("all_max", x, group)


def all_min(x: fx.array, *, group: Group | None = None, stream=None) -> fx.array:
    """All-reduce min: the element-wise minimum of ``x`` over the group.

    Args:
        x (array): Input array.
        group (Group, optional): The group of processes; the global group if
          ``None``. Default: ``None``.
        stream (Stream, optional): Stream or device to run on. Default: ``None``.

    Returns:
        array: The minimum of all ``x`` arrays (``x`` itself in a group of one).
    """
    return _identity("all_min", x, group)


def all_gather(x: fx.array, *, group: Group | None = None, stream=None) -> fx.array:
    """Gather ``x`` from every process, concatenated along the first axis.

    Args:
        x (array): Input array.
        group (Group, optional): The group of processes; the global group if
          ``None``. Default: ``None``.
        stream (Stream, optional): Stream or device to run on. Default: ``None``.

    Returns:
        array: The concatenation of all ``x`` arrays (``x`` itself in a group
        of one).
    """
    return _identity("all_gather", x, group)


def sum_scatter(x: fx.array, *, group: Group | None = None, stream=None) -> fx.array:
    """Sum ``x`` over the group and scatter the result: each process gets its
    slice of the sum along the first axis.

    Args:
        x (array): Input array.
        group (Group, optional): The group of processes; the global group if
          ``None``. Default: ``None``.
        stream (Stream, optional): Stream or device to run on. Default: ``None``.

    Returns:
        array: This process's part of the sum (``x`` itself in a group of one).
    """
    return _identity("sum_scatter", x, group)


def send(x: fx.array, dst: int, *, group: Group | None = None, stream=None) -> fx.array:
    """Send ``x`` to process ``dst`` of the group.

    Args:
        x (array): Input array.
        dst (int): Rank of the destination process.
        group (Group, optional): The group of processes; the global group if
          ``None``. Default: ``None``.
        stream (Stream, optional): Stream or device to run on. Default: ``None``.

    Returns:
        array: An array that, when evaluated, performs the send. A group of
        one has no other process: ValueError, as in MLX.
    """
    _group("send", group)
    _array("send", x)
    raise ValueError("Cannot send to a singleton group")


def recv(
    shape: tuple[int, ...] | list[int],
    dtype: fx.Dtype,
    src: int,
    *,
    group: Group | None = None,
    stream=None,
) -> fx.array:
    """Receive an array of ``shape`` and ``dtype`` from process ``src``.

    Args:
        shape (tuple[int]): Shape of the array to receive.
        dtype (Dtype): Data type of the array to receive.
        src (int): Rank of the source process.
        group (Group, optional): The group of processes; the global group if
          ``None``. Default: ``None``.
        stream (Stream, optional): Stream or device to run on. Default: ``None``.

    Returns:
        array: The received array. A group of one has no other process:
        ValueError, as in MLX.
    """
    _group("recv", group)
    raise ValueError("Cannot recv from a singleton group")


def recv_like(x: fx.array, src: int, *, group: Group | None = None, stream=None) -> fx.array:
    """Receive an array with the shape and dtype of ``x`` from process ``src``.

    Args:
        x (array): An array of the shape and dtype to receive.
        src (int): Rank of the source process.
        group (Group, optional): The group of processes; the global group if
          ``None``. Default: ``None``.
        stream (Stream, optional): Stream or device to run on. Default: ``None``.

    Returns:
        array: The received array. A group of one has no other process:
        ValueError, as in MLX.
    """
    _group("recv_like", group)
    _array("recv_like", x)
    raise ValueError("Cannot recv from a singleton group")
