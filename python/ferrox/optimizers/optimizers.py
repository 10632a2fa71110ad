"""Optimizers with ``mlx.optimizers``' names, arguments, defaults and state.

An optimizer keeps its state as a tree mirroring the parameters (plus
``step`` and ``learning_rate``), so it saves and loads like weights. Each
built-in rule runs one fused kernel per parameter (``ferrox._core._optimizers``,
the Rust ``optimizer_update`` op); Adafactor and Muon, which need reductions
and matrix products, run Rust compositions of ops. Subclasses may still
override ``init_single`` and ``apply_single`` as in MLX.
"""

from typing import Callable, List, Optional, Tuple, Union

import ferrox as fx
from ferrox._core import _optimizers as _fused
from ferrox.utils import tree_flatten, tree_map, tree_merge, tree_reduce, tree_unflatten

__all__ = [
    "Optimizer",
    "MultiOptimizer",
    "SGD",
    "RMSprop",
    "Adagrad",
    "AdaDelta",
    "Adam",
    "AdamW",
    "Adamax",
    "Lion",
    "Adafactor",
    "Muon",
    "clip_grad_norm",
]


class Optimizer:
    """The base class of the optimizers: applies a per-parameter rule
    (``apply_single``, with state made by ``init_single``) over a tree of
    parameters.

    Args:
        schedulers (dict, optional): Schedules of hyperparameters, by name.
    """

    def __init__(self, schedulers=None):
        self._initialized = False
        self._state = {"step": fx.array(0, fx.uint64)}
        self._schedulers = {k: v for k, v in (schedulers or {}).items()}
        self._scalars = None

    def update(self, model, gradients: dict):
        """Applies ``gradients`` to ``model``'s parameters and updates the model.

        Args:
            model (Module): The model to update in place.
            gradients (dict): Gradients, in the structure of ``model.trainable_parameters()``.
        """
        model.update(self.apply_gradients(gradients, model))

    def init(self, parameters: dict):
        """Creates the state of every parameter of the tree that has none yet
        (optional: the first update does it).

        Args:
            parameters (dict): The parameters to create state for.
        """

        def merge(params, state):
            if isinstance(params, (list, tuple)):
                state = list(state)
                for i in range(len(state)):
                    state[i] = merge(params[i], state[i])
                if len(state) < len(params):
                    state.extend(tree_map(lambda _: {}, params[len(state) :]))
                return type(params)(state)
            if isinstance(params, dict):
                for k, v in params.items():
                    state[k] = merge(v, state[k]) if k in state else tree_map(lambda _: {}, v)
                return state
            return state

        merge(parameters, self._state)
        tree_map(lambda p, s: s or self.init_single(p, s), parameters, self._state)
        self._initialized = True

    def init_single(self, parameter: fx.array, state: dict):
        """Creates the state of one parameter (each optimizer defines it).

        Args:
            parameter (array): One parameter.
            state (dict): Its state, filled in place.
        """
        raise NotImplementedError()

    def apply_gradients(self, gradients: dict, parameters: dict):
        """The updated parameters for ``gradients`` (a tree whose structure
        the result takes; ``parameters`` may be a superset of it).

        Args:
            gradients (dict): The gradients.
            parameters (dict): The parameters, in the same structure.

        Returns:
            dict: The updated parameters.
        """
        if not self._initialized:
            self.init(gradients)
        for name, scheduler in self._schedulers.items():
            self.state[name] = scheduler(self.step)
        self.state["step"] = self.step + 1
        self._scalars = None
        return tree_map(self.apply_single, gradients, parameters, self.state)

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """The updated ``parameter`` (each optimizer defines it; it may
        update ``state``).

        Args:
            gradient (array): Gradient of the parameter.
            parameter (array): The parameter.
            state (dict): Its state, updated in place.
        """
        raise NotImplementedError()

    def _step_scalars(self):
        """The learning rate and the step count as float32 scalars, made
        once per update and shared by every parameter's fused kernel."""
        if self._scalars is None:
            self._scalars = (self.learning_rate.astype(fx.float32), self.step.astype(fx.float32))
        return self._scalars

    def _fused(self, kernel, gradient, parameter, state, names, **constants):
        """Runs a fused step and stores the new states under ``names``."""
        lr, step = self._step_scalars()
        out = kernel(parameter, gradient, [state[n] for n in names], lr, step, **constants)
        for name, value in zip(names, out[1:]):
            state[name] = value
        return out[0]

    @property
    def state(self):
        """The optimizer's state: a tree of arrays."""
        return self._state

    @state.setter
    def state(self, state: dict):
        self._initialized = False
        self._state = state

    @property
    def step(self):
        """The number of updates done so far (a uint64 array)."""
        return self.state["step"]

    @property
    def learning_rate(self):
        """The learning rate (an array)."""
        return self.state["learning_rate"]

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, fx.array]):
        self.state["learning_rate"] = fx.array(learning_rate)

    def _maybe_schedule(self, name: str, param: Union[float, Callable[[fx.array], fx.array]]):
        """Stores ``param`` in the state, or its value at the current step if
        it is a schedule (a callable of the step), which then runs before
        every update."""
        if callable(param):
            self._schedulers[name] = param
            value = param(self.step)
        else:
            value = fx.array(param)
        self.state[name] = value


class MultiOptimizer(Optimizer):
    """Several optimizers, each for the parameters its filter accepts
    (``filters[i](path, parameter)``); the last optimizer takes the rest and
    has no filter.

    Args:
        optimizers (list(Optimizer)): The optimizers.
        filters (list(callable), optional): ``filter(path, gradient)`` choosing each optimizer's parameters but the last's (which takes the rest).
    """

    def __init__(self, optimizers, filters: list = []):
        super().__init__()
        self._state = {}
        if len(filters) != len(optimizers) - 1:
            raise ValueError(f"Given {len(filters)} filters but {len(optimizers) - 1} needed.")
        self.optimizers = optimizers
        self.filters = filters + [lambda *args, **kwargs: True]

    def _split_dictionary(self, gradients: dict):
        if len(self.optimizers) == 1:
            return [gradients]
        parts = [[] for _ in self.optimizers]
        for path, g in tree_flatten(gradients):
            for i, accepts in enumerate(self.filters):
                if accepts(path, g):
                    parts[i].append((path, g))
                    break
        return [tree_unflatten(p) for p in parts]

    def init(self, parameters: dict):
        """Initializes each optimizer with its share of the parameters."""
        for o, p in zip(self.optimizers, self._split_dictionary(parameters)):
            o.init(p)

    def apply_gradients(self, gradients: dict, parameters: dict):
        """Each optimizer's update of its share, merged into one tree."""
        tree = {}
        for o, g in zip(self.optimizers, self._split_dictionary(gradients)):
            tree = tree_merge(tree, o.apply_gradients(g, parameters))
        return tree

    @property
    def state(self):
        """``{"states": [each optimizer's state]}``."""
        return {"states": [o.state for o in self.optimizers]}

    @state.setter
    def state(self, state: dict):
        if "states" not in state or len(state["states"]) != len(self.optimizers):
            raise ValueError("Invalid state provided")
        for o, s in zip(self.optimizers, state["states"]):
            o.state = s

    @property
    def learning_rate(self):
        """The first optimizer's learning rate."""
        return self.optimizers[0].learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate: Union[float, fx.array]):
        for o in self.optimizers:
            o.learning_rate = learning_rate


def _check_betas(name: str, betas):
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"{name} beta{i + 1} should be in [0, 1), {beta} was provided instead")


class SGD(Optimizer):
    r"""Stochastic gradient descent with optional momentum, dampening,
    Nesterov momentum and weight decay (an L2 penalty on the gradient):
    :math:`v = \mu v + (1 - \tau) g`, :math:`w = w - \lambda v`.

    Args:
        learning_rate (float or callable): The learning rate, or a schedule mapping the step to it.
        momentum (float, optional): Momentum factor.
        weight_decay (float, optional): Weight decay factor.
        dampening (float, optional): Dampening of the momentum.
        nesterov (bool, optional): Use Nesterov momentum.
    """

    def __init__(
        self,
        learning_rate: Union[float, Callable[[fx.array], fx.array]],
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        dampening: float = 0.0,
        nesterov: bool = False,
    ):
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening.")
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.dampening = dampening
        self.nesterov = nesterov

    def init_single(self, parameter: fx.array, state: dict):
        """The momentum ``v``, zeros."""
        state["v"] = fx.zeros_like(parameter)

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One SGD step (fused)."""
        names = ("v",) if self.momentum > 0 else ()
        return self._fused(
            _fused.sgd_update,
            gradient,
            parameter,
            state,
            names,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            dampening=self.dampening,
            nesterov=self.nesterov,
        )


class RMSprop(Optimizer):
    r"""RMSprop: :math:`v = \alpha v + (1 - \alpha) g^2`,
    :math:`w = w - \lambda g / (\sqrt{v} + \epsilon)`.

    Args:
        learning_rate (float or callable): The learning rate, or a schedule mapping the step to it.
        alpha (float, optional): Smoothing constant of the squared-gradient average.
        eps (float, optional): Added to the denominator for numerical stability.
    """

    def __init__(self, learning_rate, alpha: float = 0.99, eps: float = 1e-8):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.alpha = alpha
        self.eps = eps
        if self.alpha < 0.0:
            raise ValueError(f"RMSprop alpha should be >=0, {self.alpha} was provided instead")
        if self.eps <= 0.0:
            raise ValueError(f"RMSprop epsilon should be >0, {self.eps} was provided instead")

    def init_single(self, parameter: fx.array, state: dict):
        """The running average ``v``, zeros."""
        state["v"] = fx.zeros_like(parameter)

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One RMSprop step (fused)."""
        return self._fused(_fused.rmsprop_update, gradient, parameter, state, ("v",), alpha=self.alpha, eps=self.eps)


class Adagrad(Optimizer):
    r"""Adagrad: :math:`v = v + g^2`, :math:`w = w - \lambda g / (\sqrt{v} + \epsilon)`.

    Args:
        learning_rate (float or callable): The learning rate, or a schedule mapping the step to it.
        eps (float, optional): Added to the denominator for numerical stability.
    """

    def __init__(self, learning_rate, eps: float = 1e-8):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        if self.eps <= 0.0:
            raise ValueError(f"Adagrad epsilon should be >0, {self.eps} was provided instead")

    def init_single(self, parameter: fx.array, state: dict):
        """The sum of squared gradients ``v``, zeros."""
        state["v"] = fx.zeros_like(parameter)

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One Adagrad step (fused)."""
        return self._fused(_fused.adagrad_update, gradient, parameter, state, ("v",), eps=self.eps)


class AdaDelta(Optimizer):
    r"""AdaDelta with a learning rate: running averages ``v`` of squared
    gradients and ``u`` of squared updates.

    Args:
        learning_rate (float or callable): The learning rate, or a schedule mapping the step to it.
        rho (float, optional): Coefficient of the running averages.
        eps (float, optional): Added to the denominator for numerical stability.
    """

    def __init__(self, learning_rate, rho: float = 0.9, eps: float = 1e-6):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.rho = rho
        self.eps = eps
        if self.rho < 0.0:
            raise ValueError(f"AdaDelta rho should be >=0, {self.rho} was provided instead")
        if self.eps <= 0.0:
            raise ValueError(f"AdaDelta epsilon should be >0, {self.eps} was provided instead")

    def init_single(self, parameter: fx.array, state: dict):
        """``v`` and ``u``, zeros."""
        state["v"] = fx.zeros_like(parameter)
        state["u"] = fx.zeros_like(parameter)

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One AdaDelta step (fused)."""
        return self._fused(_fused.adadelta_update, gradient, parameter, state, ("v", "u"), rho=self.rho, eps=self.eps)


class Adam(Optimizer):
    r"""Adam: :math:`m = \beta_1 m + (1 - \beta_1) g`,
    :math:`v = \beta_2 v + (1 - \beta_2) g^2`,
    :math:`w = w - \lambda m / (\sqrt{v} + \epsilon)`; with
    ``bias_correction`` the moments are divided by :math:`1 - \beta^t`.

    Args:
        learning_rate (float or callable): The learning rate, or a schedule mapping the step to it.
        betas (list(float), optional): Coefficients of the running averages of the gradient and its square.
        eps (float, optional): Added to the denominator for numerical stability.
        bias_correction (bool, optional): Apply bias correction.
    """

    def __init__(
        self,
        learning_rate,
        betas: List[float] = [0.9, 0.999],
        eps: float = 1e-8,
        bias_correction: bool = False,
    ):
        super().__init__()
        _check_betas("Adam", betas)
        if not 0.0 <= eps:
            raise ValueError(f"Adam epsilon should be >=0, {eps} was provided instead")
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.eps = eps
        self.bias_correction = bias_correction

    def init_single(self, parameter: fx.array, state: dict):
        """The moments ``m`` and ``v``, zeros."""
        state["m"] = fx.zeros_like(parameter)
        state["v"] = fx.zeros_like(parameter)

    def _adam(self, gradient, parameter, state, weight_decay):
        b1, b2 = self.betas
        return self._fused(
            _fused.adam_update,
            gradient,
            parameter,
            state,
            ("m", "v"),
            beta1=b1,
            beta2=b2,
            eps=self.eps,
            weight_decay=weight_decay,
            bias_correction=self.bias_correction,
        )

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One Adam step (fused)."""
        return self._adam(gradient, parameter, state, 0.0)


class AdamW(Adam):
    r"""Adam with decoupled weight decay: the parameter is first scaled by
    :math:`1 - \lambda \cdot weight\_decay`.

    Args:
        learning_rate (float or callable): The learning rate, or a schedule mapping the step to it.
        betas (list(float), optional): Coefficients of the running averages of the gradient and its square.
        eps (float, optional): Added to the denominator for numerical stability.
        weight_decay (float, optional): Weight decay factor.
        bias_correction (bool, optional): Apply bias correction.
    """

    def __init__(
        self,
        learning_rate,
        betas: List[float] = [0.9, 0.999],
        eps: float = 1e-8,
        weight_decay: float = 0.01,
        bias_correction: bool = False,
    ):
        super().__init__(learning_rate=learning_rate, betas=betas, eps=eps, bias_correction=bias_correction)
        self.weight_decay = weight_decay

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One AdamW step (fused)."""
        return self._adam(gradient, parameter, state, self.weight_decay)


class Adamax(Adam):
    r"""Adamax, Adam with the infinity norm: :math:`v = \max(\beta_2 v, |g|)`,
    :math:`w = w - \lambda m / (v + \epsilon)`.

    Args:
        learning_rate (float or callable): The learning rate, or a schedule mapping the step to it.
        betas (list(float), optional): Coefficients of the running averages of the gradient and its square.
        eps (float, optional): Added to the denominator for numerical stability.
    """

    def __init__(self, learning_rate, betas: List[float] = [0.9, 0.999], eps: float = 1e-8):
        super().__init__(learning_rate, betas, eps)
        if not 0.0 <= eps:
            raise ValueError(f"Epsilon value should be >=0, {eps} was provided instead")

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One Adamax step (fused)."""
        b1, b2 = self.betas
        return self._fused(
            _fused.adamax_update, gradient, parameter, state, ("m", "v"), beta1=b1, beta2=b2, eps=self.eps
        )


class Lion(Optimizer):
    r"""Lion: the update is the sign of :math:`\beta_1 m + (1 - \beta_1) g`,
    with decoupled weight decay; :math:`m = \beta_2 m + (1 - \beta_2) g`.

    Args:
        learning_rate (float or callable): The learning rate, or a schedule mapping the step to it.
        betas (list(float), optional): Coefficients of the update interpolation and of the momentum.
        weight_decay (float, optional): Weight decay factor.
    """

    def __init__(self, learning_rate, betas: List[float] = [0.9, 0.99], weight_decay: float = 0.0):
        super().__init__()
        _check_betas("Lion", betas)
        self._maybe_schedule("learning_rate", learning_rate)
        self.betas = betas
        self.weight_decay = weight_decay

    def init_single(self, parameter: fx.array, state: dict):
        """The momentum ``m``, zeros."""
        state["m"] = fx.zeros_like(parameter)

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One Lion step (fused)."""
        b1, b2 = self.betas
        return self._fused(
            _fused.lion_update, gradient, parameter, state, ("m",), beta1=b1, beta2=b2, weight_decay=self.weight_decay
        )


class Adafactor(Optimizer):
    r"""Adafactor: factored second moments (row and column averages for
    parameters of 2 or more dimensions), update clipping, relative step
    sizes and parameter scaling, as MLX's.

    Args:
        learning_rate (float or callable, optional): The learning rate; relative steps when None.
        eps (tuple(float, float), optional): Regularizers of the squared gradient and of the parameter scale.
        clip_threshold (float, optional): Threshold of the update's root mean square.
        decay_rate (float, optional): Exponent of the second-moment decay.
        beta_1 (float, optional): Coefficient of the first moment (none kept when None).
        weight_decay (float, optional): Weight decay factor.
        scale_parameter (bool, optional): Scale the learning rate by the parameter's root mean square.
        relative_step (bool, optional): Compute a time-dependent learning rate when ``learning_rate`` is None.
        warmup_init (bool, optional): Warm the relative step up.
    """

    def __init__(
        self,
        learning_rate: Union[float, Callable[[fx.array], fx.array], None] = None,
        eps: Tuple[float, float] = (1e-30, 1e-3),
        clip_threshold: float = 1.0,
        decay_rate: float = -0.8,
        beta_1: Optional[float] = None,
        weight_decay: float = 0.0,
        scale_parameter: bool = True,
        relative_step: bool = True,
        warmup_init: bool = False,
    ):
        super().__init__()
        if learning_rate is not None:
            self._maybe_schedule("learning_rate", learning_rate)
        self.eps = eps
        self.clip_threshold = clip_threshold
        self.decay_rate = decay_rate
        self.beta_1 = beta_1
        self.weight_decay = weight_decay
        self.scale_parameter = scale_parameter
        self.relative_step = relative_step
        self.warmup_init = warmup_init

    def _state_names(self, parameter):
        names = ["exp_avg_sq_row", "exp_avg_sq_col"] if parameter.ndim >= 2 else ["exp_avg_sq"]
        if self.beta_1 is not None:
            names.append("exp_avg")
        return names

    def init_single(self, parameter: fx.array, state: dict):
        """The second-moment averages (factored for 2+ dimensions) and, with
        ``beta_1``, the first moment."""
        if parameter.ndim >= 2:
            shape = parameter.shape
            state["exp_avg_sq_row"] = fx.zeros(shape[:-1], dtype=parameter.dtype)
            state["exp_avg_sq_col"] = fx.zeros(shape[:-2] + shape[-1:], dtype=parameter.dtype)
        else:
            state["exp_avg_sq"] = fx.zeros_like(parameter)
        if self.beta_1 is not None:
            state["exp_avg"] = fx.zeros_like(parameter)

    def _compute_rms(self, inputs: fx.array) -> fx.array:
        """The root mean square of ``inputs`` (MLX's helper)."""
        return fx.sqrt(fx.mean(fx.square(inputs)))

    def _compute_learning_rate(self, step: fx.array, parameter_rms: fx.array) -> fx.array:
        """The step size: relative to the step count or the learning rate,
        times the parameter scale when ``scale_parameter`` (MLX's helper)."""
        if self.relative_step:
            min_step = 1e-6 * step if self.warmup_init else 1e-2
            relative_step_size = fx.minimum(min_step, fx.rsqrt(step))
        else:
            relative_step_size = self.learning_rate
        relative_step_size = fx.array(relative_step_size).astype(parameter_rms.dtype)
        parameter_scale = 1.0
        if self.scale_parameter:
            parameter_scale = fx.maximum(self.eps[1], parameter_rms)
        return parameter_scale * relative_step_size

    def _approximate_exp_moving_avg(self, exp_avg_sq_row: fx.array, exp_avg_sq_col: fx.array) -> fx.array:
        """The factored second moment rebuilt from its row and column
        averages (MLX's helper)."""
        r_factor = fx.rsqrt(exp_avg_sq_row / fx.mean(exp_avg_sq_row, axis=-1, keepdims=True))
        c_factor = fx.rsqrt(exp_avg_sq_col)
        return fx.expand_dims(r_factor, axis=-1) * fx.expand_dims(c_factor, axis=-2)

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One Adafactor step."""
        names = self._state_names(parameter)
        lr = None if self.relative_step else self.state.get("learning_rate")
        out = _fused.adafactor_update(
            parameter,
            gradient,
            [state[n] for n in names],
            lr,
            self.step,
            eps=tuple(self.eps),
            clip_threshold=self.clip_threshold,
            decay_rate=self.decay_rate,
            beta_1=self.beta_1,
            weight_decay=self.weight_decay,
            scale_parameter=self.scale_parameter,
            relative_step=self.relative_step,
            warmup_init=self.warmup_init,
        )
        for name, value in zip(names, out[1:]):
            state[name] = value
        return out[0]


class Muon(Optimizer):
    r"""Muon: SGD momentum whose update of each 2-D (or flattened) parameter
    is orthogonalized by Newton-Schulz iterations.

    Args:
        learning_rate (float or callable): The learning rate, or a schedule mapping the step to it.
        momentum (float, optional): Momentum factor.
        weight_decay (float, optional): Weight decay factor.
        nesterov (bool, optional): Use Nesterov momentum.
        ns_steps (int, optional): Newton-Schulz iterations.
    """

    def __init__(
        self,
        learning_rate,
        momentum: float = 0.95,
        weight_decay: float = 0.01,
        nesterov: bool = True,
        ns_steps: int = 5,
    ):
        super().__init__()
        self._maybe_schedule("learning_rate", learning_rate)
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.nesterov = nesterov
        self.ns_steps = ns_steps

    def init_single(self, parameter: fx.array, state: dict):
        """The momentum ``v``, zeros."""
        state["v"] = fx.zeros_like(parameter)

    def apply_single(self, gradient: fx.array, parameter: fx.array, state: dict):
        """One Muon step."""
        new_parameter, state["v"] = _fused.muon_update(
            parameter,
            gradient,
            [state["v"]],
            self.learning_rate,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            nesterov=self.nesterov,
            ns_steps=self.ns_steps,
        )
        return new_parameter


def clip_grad_norm(grads, max_norm):
    """Scales ``grads`` (a tree) down so that their global L2 norm is at most
    ``max_norm``; returns the scaled tree and the norm before scaling.

    Args:
        grads (dict): Tree of gradient arrays.
        max_norm (float): Largest global L2 norm allowed.

    Returns:
        tuple(dict, array): The clipped gradients and their norm before clipping.
    """
    if max_norm < 0:
        raise ValueError(f"max_norm should be >=0, {max_norm} was provided instead")
    norm_squared = tree_reduce(lambda acc, g: acc + g.square().sum(), grads, 0.0)
    total_norm = fx.sqrt(norm_squared)
    normalizer = fx.minimum(max_norm / (total_norm + 1e-6), 1.0)
    return tree_map(lambda g: g * normalizer, grads), total_norm

