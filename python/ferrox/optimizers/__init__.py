"""ferrox.optimizers: ``mlx.optimizers``' optimizers, schedules and
``clip_grad_norm``."""

from ferrox.optimizers.optimizers import *  # noqa: F401,F403
from ferrox.optimizers.schedulers import *  # noqa: F401,F403
