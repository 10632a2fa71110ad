"""``Module``: the base class of every layer and model (MLX's
``mlx.nn.Module``)."""

from __future__ import annotations

import os
import textwrap
from typing import Any, Callable, List, Optional, Tuple, Union

import ferrox as fx
from ferrox.utils import _children, tree_flatten, tree_unflatten


class Module(dict):
    """Base class for building neural networks.

    A ``Module`` is a dict: the arrays, lists, tuples and dicts assigned as
    attributes (``self.weight = ...``) are its entries, and any nesting of
    them may hold arrays and other modules. Other attributes (ints, strings,
    callables) are ordinary Python attributes. :meth:`parameters` collects
    every array whose key does not start with an underscore;
    :meth:`trainable_parameters` leaves out the frozen ones
    (:meth:`freeze`), and :func:`ferrox.nn.value_and_grad` differentiates
    with respect to those.

    .. code-block:: python

        class MLP(nn.Module):
            def __init__(self, in_dims, out_dims, hidden_dims=16):
                super().__init__()
                self.in_proj = nn.Linear(in_dims, hidden_dims)
                self.out_proj = nn.Linear(hidden_dims, out_dims)

            def __call__(self, x):
                return self.out_proj(fx.maximum(self.in_proj(x), 0))
    """

    __call__: Callable

    def __init__(self):
        """Must be called by subclasses before they assign attributes."""
        self._no_grad = set()
        self._training = True

    @property
    def training(self) -> bool:
        """Whether the module is in training mode (see :meth:`train`)."""
        return self._training

    @property
    def state(self) -> Module:
        """The module's state dict: the module itself, holding every array,
        container and submodule assigned to it (parameters included). Unlike
        :meth:`parameters` it is a reference: writing to it changes the
        module."""
        return self

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = tree_flatten(self.children(), is_leaf=self.is_module)
        text = f"{type(self).__name__}({self._extra_repr()}"
        for key, child in children:
            text += "\n" + textwrap.indent(f"({key}): {child!r}", prefix="  ")
        if children:
            text += "\n"
        return text + ")"

    def __getattr__(self, key: str):
        value = self.get(key, None)
        if value is not None:
            return value
        return super().__getattribute__(key)

    def __setattr__(self, key: str, value: Any):
        if isinstance(value, (fx.array, dict, list, tuple)):
            # A plain attribute of the same name would shadow the entry.
            if hasattr(self, key) and key not in self:
                delattr(self, key)
            self[key] = value
        else:
            super().__setattr__(key, value)
            self.pop(key, None)

    def __delattr__(self, key: str):
        if self.get(key, None) is not None:
            del self[key]
        else:
            super().__delattr__(key)

    def load_weights(
        self,
        file_or_weights: Union[str, os.PathLike, List[Tuple[str, fx.array]]],
        strict: bool = True,
    ) -> Module:
        """Updates the module's parameters from a ``.npz`` or ``.safetensors``
        file, or from a list of ``(name, array)`` pairs (names in
        :func:`ferrox.utils.tree_flatten`'s dot notation).

        With ``strict`` (default) the weights must match the parameters
        exactly: a name the module lacks, a parameter not given, a value that
        is not an array or a shape that differs is a ValueError naming them.
        Otherwise only the weights the module has are loaded, unchecked.
        Returns the module.

        Args:
            file_or_weights (str or PathLike or list(tuple(str, array))): A ``.npz`` or ``.safetensors`` file, or ``(name, array)`` pairs.
            strict (bool, optional): Refuse missing, extra and mis-shaped weights.

        Returns:
            Module: The module.
        """
        weights = file_or_weights
        if isinstance(weights, (str, os.PathLike)):
            weights = list(fx.load(os.fspath(weights)).items())
        if strict:
            new_weights = dict(weights)
            current = tree_flatten(self.parameters(), destination={})
            extras = new_weights.keys() - current.keys()
            if extras:
                names = ",\n".join(sorted(extras))
                raise ValueError(f"Received {len(extras)} parameters not in model: \n{names}.")
            missing = current.keys() - new_weights.keys()
            if missing:
                names = ",\n".join(sorted(missing))
                raise ValueError(f"Missing {len(missing)} parameters: \n{names}.")
            for key, value in current.items():
                new = new_weights[key]
                if not isinstance(new, fx.array):
                    raise ValueError(f"Expected fx.array but received {type(new)} for parameter {key}")
                if new.shape != value.shape:
                    raise ValueError(f"Expected shape {value.shape} but received shape {new.shape} for parameter {key}")
        if len(weights) != 0:
            self.update(tree_unflatten(weights), strict=False)
        return self

    def save_weights(self, file: Union[str, os.PathLike]) -> None:
        """Saves the parameters to ``file``, in the format its extension
        names: ``.npz`` (:func:`ferrox.savez`) or ``.safetensors``
        (:func:`ferrox.save_safetensors`); keys in dot notation.

        Args:
            file (str or PathLike): ``.npz`` or ``.safetensors`` file to write.
        """
        file = os.fspath(file)
        params = tree_flatten(self.parameters(), destination={})
        if file.endswith(".npz"):
            fx.savez(file, **params)
        elif file.endswith(".safetensors"):
            fx.save_safetensors(file, params)
        else:
            raise ValueError(f"Unsupported file extension for {file}. Use '.npz' or '.safetensors'.")

    @staticmethod
    def is_module(value: Any) -> bool:
        """Whether ``value`` is a :class:`Module`.

        Args:
            value (Any): The value.

        Returns:
            bool: Whether it is a Module.
        """
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module: Module, key: str, value: Any) -> bool:
        """Filter for :meth:`filter_and_map` keeping what may hold modules.

        Args:
            module (Module): The module.
            key (str): The attribute name.
            value (Any): The attribute.

        Returns:
            bool: Whether the value holds child modules.
        """
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module: Module, key: str, value: Any) -> bool:
        """Filter keeping arrays and containers whose key is public.

        Args:
            module (Module): The module.
            key (str): The attribute name.
            value (Any): The attribute.

        Returns:
            bool: Whether the value holds parameters.
        """
        return isinstance(value, (dict, list, fx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module: Module, key: str, value: Any) -> bool:
        """:meth:`valid_parameter_filter` without the frozen keys.

        Args:
            module (Module): The module.
            key (str): The attribute name.
            value (Any): The attribute.

        Returns:
            bool: Whether the value holds trainable parameters.
        """
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    def filter_and_map(
        self,
        filter_fn: Callable[[Module, str, Any], bool],
        map_fn: Optional[Callable] = None,
        is_leaf_fn: Optional[Callable[[Module, str, Any], bool]] = None,
    ) -> dict:
        """The module's contents, recursively, as a tree of dicts and lists
        keeping the entries for which ``filter_fn(module, key, value)`` holds
        (filtered-out list and dict entries become ``{}``), with
        ``map_fn(value)`` applied to each leaf. ``is_leaf_fn(module, key,
        value)`` decides the leaves (default: anything that is not a module,
        dict or list).

        Args:
            filter_fn (callable): ``filter_fn(module, key, value)``: whether to keep a value.
            map_fn (callable, optional): Applied to the kept values.
            is_leaf_fn (callable, optional): ``is_leaf_fn(module, key, value)``: whether to stop descending.

        Returns:
            dict: The kept (mapped) values, in the module's structure.
        """
        map_fn = map_fn or (lambda x: x)
        is_leaf_fn = is_leaf_fn or (lambda m, k, v: not isinstance(v, (Module, dict, list)))
        return {k: _unwrap(self, k, v, filter_fn, map_fn, is_leaf_fn) for k, v in self.items() if filter_fn(self, k, v)}

    def parameters(self) -> dict:
        """Every array of the module (submodules included) as a tree of
        dicts and lists.

        Returns:
            dict: Every parameter array, in the module's structure.
        """
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self) -> dict:
        """Every array that is not frozen, as a tree of dicts and lists.

        Returns:
            dict: The parameters not frozen, in the module's structure.
        """
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self) -> dict:
        """The direct submodules, in their dicts and lists.

        Returns:
            dict: The direct child modules.
        """
        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=lambda m, k, v: isinstance(v, Module))

    def leaf_modules(self) -> dict:
        """The submodules that hold no other modules, in their dicts and
        lists.

        Returns:
            dict: The modules without children, in the module's structure.
        """

        def is_leaf_module(m, k, v):
            return isinstance(v, Module) and len(tree_flatten(v.children())) == 0

        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf_module)

    def update(self, parameters: dict, strict: bool = True) -> Module:
        """Replaces the module's parameters with those in ``parameters`` (a
        complete or partial tree like :meth:`parameters`); the places it does
        not name keep their values.

        With ``strict`` (default) every name must be a parameter of the module
        and every replacement of an array an array, else ValueError. Returns
        the module.

        Args:
            parameters (dict): New parameters, in the module's structure.
            strict (bool, optional): Refuse keys the module does not have.

        Returns:
            Module: The module.
        """

        def apply(dst, new):
            if isinstance(new, dict):
                for key in new:
                    if key in dst:
                        _set_entry(dst, key, new[key], apply, strict)
                    elif strict:
                        raise ValueError(f'Module does not have parameter named "{key}".')
            elif isinstance(new, list):
                for i in range(len(new)):
                    if i >= len(dst):
                        if strict:
                            raise ValueError(f"List index {i} is out of bounds for destination of length {len(dst)}.")
                        continue
                    _set_entry(dst, i, new[i], apply, strict)
            elif strict:
                raise ValueError(f"Received invalid type: {type(new).__name__}.")

        apply(self, parameters)
        return self

    def apply(
        self,
        map_fn: Callable[[fx.array], fx.array],
        filter_fn: Optional[Callable[[Module, str, Any], bool]] = None,
    ) -> Module:
        """Replaces each parameter ``p`` selected by ``filter_fn`` (default
        :meth:`valid_parameter_filter`) with ``map_fn(p)``; for instance
        ``model.apply(lambda p: p.astype(fx.float16))``. Returns the
        module.

        Args:
            map_fn (callable): Maps each parameter.
            filter_fn (callable, optional): Chooses the parameters (all by default).

        Returns:
            Module: The module.
        """
        filter_fn = filter_fn or Module.valid_parameter_filter
        self.update(self.filter_and_map(filter_fn, map_fn))
        return self

    def update_modules(self, modules: dict, strict: bool = True) -> Module:
        """Replaces submodules with those in ``modules`` (a complete or
        partial tree like :meth:`children`; ``{}`` keeps a place as it is).

        With ``strict`` (default) every name must be a submodule place of the
        module, else ValueError. Returns the module.

        Args:
            modules (dict): New child modules, in the module's structure.
            strict (bool, optional): Refuse keys the module does not have.

        Returns:
            Module: The module.
        """
        _update_modules(self, modules, strict)
        return self

    def apply_to_modules(self, apply_fn: Callable[[str, Module], Any]) -> Module:
        """Calls ``apply_fn(path, module)`` for this module (path ``""``) and
        every submodule (dot-separated paths such as ``"layers.0.linear"``).
        Returns the module.

        Args:
            apply_fn (callable): ``apply_fn(path, module)`` for the module and every descendant.

        Returns:
            Module: The module.
        """
        stack = [("", self)]
        while stack:
            prefix, module = stack.pop()
            apply_fn(prefix, module)
            prefix = "." + prefix if prefix else ""
            stack.extend(tree_flatten(module.children(), prefix=prefix, is_leaf=self.is_module))
        return self

    def modules(self) -> List[Module]:
        """This module and every submodule, in a list.

        Returns:
            list(Module): The module and its descendants.
        """
        found = []
        self.apply_to_modules(lambda _, m: found.append(m))
        return found

    def named_modules(self) -> List[Tuple[str, Module]]:
        """``(path, module)`` for this module and every submodule.

        Returns:
            list(tuple(str, Module)): The module and its descendants with their paths.
        """
        found = []
        self.apply_to_modules(lambda k, m: found.append((k, m)))
        return found

    def _validate_keys(self, keys, strict):
        keys = keys if isinstance(keys, list) else [keys]
        if strict:
            for k in keys:
                if k not in self:
                    raise KeyError(f"Module doesn't contain member {k}.")
        return keys

    def _validate_keys_recursive(self, keys):
        # A key such as "bias" must be somewhere in the model, not in every
        # submodule.
        keys = keys if isinstance(keys, list) else [keys]
        modules = self.modules()
        for k in keys:
            if not any(k in m for m in modules):
                raise KeyError(f"Module doesn't contain member {k}.")

    def freeze(
        self,
        *,
        recurse: bool = True,
        keys: Optional[Union[str, List[str]]] = None,
        strict: bool = False,
    ) -> Module:
        """Freezes parameters: no gradients are computed for them by
        :func:`ferrox.nn.value_and_grad`. Idempotent.

        Args:
            recurse: freeze the submodules' parameters too (default True).
            keys: the parameter names to freeze (``"bias"`` freezes every
                bias); all parameters when None.
            strict: a KeyError when a key is not a member (of some module,
                when recursing).

        Returns the module.

        Returns:
            Module: The module.
        """

        def freeze_one(_, m):
            local_keys = keys
            if local_keys is None:
                local_keys = tree_flatten(
                    m.filter_and_map(lambda m, k, v: not isinstance(v, Module) and m.valid_parameter_filter(m, k, v))
                )
                local_keys = [k for k, _ in local_keys]
            m._no_grad.update(m._validate_keys(local_keys, strict_each))

        strict_each = strict
        if recurse:
            if strict and keys is not None:
                self._validate_keys_recursive(keys)
                strict_each = False
            self.apply_to_modules(freeze_one)
        else:
            freeze_one("", self)
        return self

    def unfreeze(
        self,
        *,
        recurse: bool = True,
        keys: Optional[Union[str, List[str]]] = None,
        strict: bool = False,
    ) -> Module:
        """Unfreezes parameters (see :meth:`freeze`; same arguments).
        Idempotent. Returns the module.

        Args:
            recurse (bool, optional): Unfreeze the descendants too.
            keys (str or list(str), optional): Only these parameters.
            strict (bool, optional): Refuse keys the module does not have.

        Returns:
            Module: The module.
        """

        def unfreeze_one(_, m):
            if keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(m._validate_keys(keys, strict_each))

        strict_each = strict
        if recurse:
            if strict and keys is not None:
                self._validate_keys_recursive(keys)
                strict_each = False
            self.apply_to_modules(unfreeze_one)
        else:
            unfreeze_one("", self)
        return self

    def _set_training_mode(self, mode: bool) -> None:
        self._training = mode

    def train(self, mode: bool = True) -> Module:
        """Sets this module and its submodules in training mode (or out of
        it, ``mode=False``); :class:`Dropout`, for one, is the identity out
        of training mode. Returns the module.

        Args:
            mode (bool, optional): Training (True) or evaluation (False) mode.

        Returns:
            Module: The module.
        """
        self.apply_to_modules(lambda _, m: m._set_training_mode(mode))
        return self

    def eval(self) -> Module:
        """Sets evaluation mode: ``train(False)``.

        Returns:
            Module: The module.
        """
        return self.train(False)

    def set_dtype(
        self,
        dtype: fx.Dtype,
        predicate: Optional[Callable[[fx.Dtype], bool]] = lambda x: fx.issubdtype(x, fx.floating),
    ) -> None:
        """Casts the parameters whose dtype satisfies ``predicate`` (default:
        the floating ones, so integer parameters stay as they are; None: all)
        to ``dtype``.

        Args:
            dtype (Dtype): The new dtype.
            predicate (callable, optional): Which current dtypes to convert (floating ones by default).
        """
        if predicate is None:
            predicate = lambda _: True  # noqa: E731
        self.apply(lambda x: x.astype(dtype) if predicate(x.dtype) else x)


def _set_entry(dst, key, new, recurse, strict):
    """``dst[key] = new`` for an array entry (which strict updates only
    replace with arrays); a container entry is updated recursively."""
    current = dst[key]
    if isinstance(current, fx.array):
        if strict and not isinstance(new, fx.array):
            raise ValueError(f"Received invalid type: {type(new).__name__}.")
        dst[key] = new
    else:
        recurse(current, new)


def _update_modules(dst, modules, strict):
    """The walk of :meth:`Module.update_modules`."""

    def set_module(key):
        current, new = dst[key], modules[key]
        if isinstance(current, Module) and isinstance(new, Module):
            dst[key] = new
        elif isinstance(current, (dict, list)):
            _update_modules(current, new, strict)
        elif strict and new != {}:
            raise ValueError(f"Received invalid type: {type(new).__name__}.")

    if isinstance(modules, dict):
        for key in modules:
            if key in dst:
                set_module(key)
            elif strict:
                raise ValueError(f'Module does not have sub-module named "{key}".')
    elif isinstance(modules, list):
        for i in range(len(modules)):
            if i >= len(dst):
                if strict:
                    raise ValueError(f"List index {i} is out of bounds for destination of length {len(dst)}.")
                continue
            set_module(i)
    elif strict:
        raise ValueError(f"Received invalid type: {type(modules).__name__}.")


def _unwrap(model, value_key, value, filter_fn, map_fn, is_leaf_fn):
    """The walk of :meth:`Module.filter_and_map` below one entry."""
    if is_leaf_fn(model, value_key, value):
        return map_fn(value)
    if isinstance(value, Module):
        return {
            k: _unwrap(value, k, v, filter_fn, map_fn, is_leaf_fn) for k, v in value.items() if filter_fn(value, k, v)
        }
    if isinstance(value, (dict, list)):
        out = {}
        for k, v in _children(value):
            key = f"{value_key}.{k}"
            out[k] = _unwrap(model, key, v, filter_fn, map_fn, is_leaf_fn) if filter_fn(model, key, v) else {}
        return out if isinstance(value, dict) else list(out.values())
    raise RuntimeError("Unexpected leaf found while traversing the module")
