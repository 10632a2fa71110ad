"""Learning-rate schedules with ``mlx.optimizers``' names: each function
returns ``schedule(step) -> array``, which an optimizer given it as
``learning_rate`` evaluates before every update."""

import math
from typing import Callable, List

import ferrox as fx

__all__ = ["exponential_decay", "step_decay", "cosine_decay", "join_schedules", "linear_schedule"]


def exponential_decay(init: float, decay_rate: float) -> Callable:
    """``init * decay_rate ** step``.

    Args:
        init (float): Initial value.
        decay_rate (float): Factor per step.

    Returns:
        callable: The schedule, mapping the step to ``init * decay_rate ** step``.
    """

    def schedule(step):
        return init * decay_rate**step

    return schedule


def step_decay(init: float, decay_rate: float, step_size: int) -> Callable:
    """``init * decay_rate ** (step // step_size)``.

    Args:
        init (float): Initial value.
        decay_rate (float): Factor per ``step_size`` steps.
        step_size (int): Steps between decays.

    Returns:
        callable: The schedule.
    """
    if step_size < 1:
        raise ValueError(f"step_size must be greater than 0, but got {step_size}.")

    def schedule(step):
        return init * (decay_rate ** (step // step_size))

    return schedule


def cosine_decay(init: float, decay_steps: int, end: float = 0.0) -> Callable:
    """Half a cosine from ``init`` down to ``end`` over ``decay_steps``
    steps, then ``end``.

    Args:
        init (float): Initial value.
        decay_steps (int): Steps to decay over.
        end (float, optional): Final value.

    Returns:
        callable: The schedule.
    """
    if decay_steps < 1:
        raise ValueError(f"decay_steps must be greater than 0, but got {decay_steps}.")

    def schedule(step):
        s = fx.minimum(step, decay_steps)
        decay = 0.5 * (1.0 + fx.cos((math.pi / decay_steps) * s))
        return end + decay * (init - end)

    return schedule


def join_schedules(schedules: List[Callable], boundaries: List[int]) -> Callable:
    """``schedules[i + 1]`` from step ``boundaries[i]`` on, given the steps
    counted from that boundary.

    Args:
        schedules (list(callable)): The schedules, in order.
        boundaries (list(int)): Steps where the next schedule starts (one fewer than ``schedules``).

    Returns:
        callable: The joined schedule.
    """
    if len(schedules) == 0:
        raise ValueError("Must provide at least 1 schedule to join.")
    if len(schedules) != len(boundaries) + 1:
        raise ValueError(f"Received {len(boundaries)} boundaries but expected {len(schedules) - 1}.")

    def schedule(step):
        output = schedules[0](step)
        for boundary, later in zip(boundaries, schedules[1:]):
            output = fx.where(step < boundary, output, later(step - boundary))
        return output

    return schedule


def linear_schedule(init: float, end: float, steps: int) -> Callable:
    """From ``init`` to ``end`` linearly over ``steps`` steps, then ``end``.

    Args:
        init (float): Initial value.
        end (float): Final value.
        steps (int): Steps to go from ``init`` to ``end``.

    Returns:
        callable: The schedule.
    """
    if steps < 1:
        raise ValueError(f"steps must be greater than 0, but got {steps}.")

    def schedule(step):
        step = fx.minimum(step, steps)
        return step * ((end - init) / steps) + init

    return schedule
