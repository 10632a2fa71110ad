//! Activation layers: the layer classes of MLX's `mlx.nn`, each applying
//! the function of the same name in [`crate::functions`] (softmax-like
//! layers over the last axis).

use crate::functions;
use crate::module::{Forward, Module, Param};
use ferrox::{ops, Array, Dtype, Error, Result, Scalar};

/// A parameterless activation layer `$name` applying `$f`.
macro_rules! activation {
    ($(#[$doc:meta])* $name:ident => $f:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name {
            training: bool,
        }

        impl $name {
            /// The layer.
            pub fn new() -> $name {
                $name { training: true }
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::new()
            }
        }

        impl Module for $name {
            entries!();
            training_flag!();
        }

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                ($f)(x)
            }
        }
    };
}

/// An activation layer `$name` with one option `$field` (default
/// `$default`), applying `$f(self, x)`.
macro_rules! activation_with {
    ($(#[$doc:meta])* $name:ident { $field:ident: $ty:ty = $default:expr } => $f:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name {
            $field: $ty,
            training: bool,
        }

        impl $name {
            #[doc = concat!("The layer with `", stringify!($field), "` (MLX's default: `", stringify!($default), "`).")]
            pub fn new($field: $ty) -> $name {
                $name { $field, training: true }
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::new($default)
            }
        }

        impl Module for $name {
            entries!();
            training_flag!();
        }

        impl Forward for $name {
            fn forward(&self, x: &Array) -> Result<Array> {
                let f: fn(&$name, &Array) -> Result<Array> = $f;
                f(self, x)
            }
        }
    };
}

activation!(
    /// The logistic sigmoid ([`functions::sigmoid`]).
    Sigmoid => functions::sigmoid
);
activation!(
    /// Mish ([`functions::mish`]).
    Mish => functions::mish
);
activation!(
    /// The rectified linear unit ([`functions::relu`]).
    ReLU => functions::relu
);
activation!(
    /// ReLU squared ([`functions::relu2`]).
    ReLU2 => functions::relu2
);
activation!(
    /// ReLU capped at 6 ([`functions::relu6`]).
    ReLU6 => functions::relu6
);
activation!(
    /// The softmax over the last axis ([`functions::softmax`]).
    Softmax => |x| functions::softmax(x, &[-1])
);
activation!(
    /// The softplus ([`functions::softplus`]).
    Softplus => functions::softplus
);
activation!(
    /// The softsign ([`functions::softsign`]).
    Softsign => functions::softsign
);
activation!(
    /// The sigmoid linear unit ([`functions::silu`]).
    SiLU => functions::silu
);
activation!(
    /// The log-softmax over the last axis ([`functions::log_softmax`]).
    LogSoftmax => |x| functions::log_softmax(x, &[-1])
);
activation!(
    /// `log(sigmoid(x))` ([`functions::log_sigmoid`]).
    LogSigmoid => functions::log_sigmoid
);
activation!(
    /// The hyperbolic tangent ([`functions::tanh`]).
    Tanh => functions::tanh
);
activation!(
    /// The hard swish ([`functions::hardswish`]).
    Hardswish => functions::hardswish
);
activation!(
    /// The scaled ELU ([`functions::selu`]).
    SELU => functions::selu
);
activation!(
    /// The hard tanh on `[-1, 1]` ([`functions::hard_tanh`]).
    HardTanh => |x| functions::hard_tanh(x, -1.0, 1.0)
);
activation!(
    /// The softmin over the last axis ([`functions::softmin`]).
    Softmin => |x| functions::softmin(x, &[-1])
);

activation_with!(
    /// The gated linear unit over `axis` ([`functions::glu`]).
    GLU { axis: isize = -1 } => |l, x| functions::glu(x, l.axis)
);
activation_with!(
    /// The leaky ReLU ([`functions::leaky_relu`]).
    LeakyReLU { negative_slope: f64 = 1e-2 } => |l, x| functions::leaky_relu(x, l.negative_slope)
);
activation_with!(
    /// The exponential linear unit ([`functions::elu`]).
    ELU { alpha: f64 = 1.0 } => |l, x| functions::elu(x, l.alpha)
);
activation_with!(
    /// Soft shrinkage ([`functions::softshrink`]).
    Softshrink { lambd: f64 = 0.5 } => |l, x| functions::softshrink(x, l.lambd)
);
activation_with!(
    /// The continuously differentiable ELU ([`functions::celu`]).
    CELU { alpha: f64 = 1.0 } => |l, x| functions::celu(x, l.alpha)
);
activation_with!(
    /// The binary step at `threshold` ([`functions::step`]).
    Step { threshold: f64 = 0.0 } => |l, x| functions::step(x, l.threshold)
);
activation_with!(
    /// Hard shrinkage ([`functions::hard_shrink`]).
    HardShrink { lambd: f64 = 0.5 } => |l, x| functions::hard_shrink(x, l.lambd)
);

/// Which form of GELU a [`GELU`] layer computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeluApprox {
    /// The exact form ([`functions::gelu`], `"none"`).
    None,
    /// The tanh approximation ([`functions::gelu_approx`], `"precise"` or
    /// `"tanh"`).
    Precise,
    /// The sigmoid approximation ([`functions::gelu_fast_approx`], `"fast"`).
    Fast,
}

impl GeluApprox {
    /// The form named `name`: `"none"`, `"precise"`, `"tanh"` or `"fast"`.
    pub fn parse(name: &str) -> Result<GeluApprox> {
        match name {
            "none" => Ok(GeluApprox::None),
            "precise" | "tanh" => Ok(GeluApprox::Precise),
            "fast" => Ok(GeluApprox::Fast),
            _ => Err(Error::invalid(
                "GELU",
                format!("The approximation should be in ['none', 'precise', 'tanh', 'fast'] but '{name}' was given"),
            )),
        }
    }
}

/// The Gaussian error linear unit, exact or approximated.
#[derive(Clone, Debug)]
pub struct GELU {
    approx: GeluApprox,
    training: bool,
}

impl GELU {
    /// The layer computing the form `approx`.
    pub fn new(approx: GeluApprox) -> GELU {
        GELU { approx, training: true }
    }
}

impl Default for GELU {
    fn default() -> GELU {
        GELU::new(GeluApprox::None)
    }
}

impl Module for GELU {
    entries!();
    training_flag!();
}

impl Forward for GELU {
    fn forward(&self, x: &Array) -> Result<Array> {
        match self.approx {
            GeluApprox::None => functions::gelu(x),
            GeluApprox::Precise => functions::gelu_approx(x),
            GeluApprox::Fast => functions::gelu_fast_approx(x),
        }
    }
}

/// The parametric ReLU `max(0, x) + a * min(0, x)` with a learned `weight`
/// `a` of `num_parameters` entries.
#[derive(Clone, Debug)]
pub struct PReLU {
    /// The slopes, `[num_parameters]`.
    pub weight: Param,
    training: bool,
}

impl PReLU {
    /// `num_parameters` slopes starting at `init` (MLX's defaults: 1 and 0.25).
    pub fn new(num_parameters: usize, init: f64) -> Result<PReLU> {
        let value = Array::scalar_of(Scalar::Float(init), Dtype::F32);
        Ok(PReLU { weight: Param::new(ops::full(&[num_parameters], &value, Some(Dtype::F32))?), training: true })
    }
}

impl Module for PReLU {
    entries!("weight": param weight);
    training_flag!();
}

impl Forward for PReLU {
    fn forward(&self, x: &Array) -> Result<Array> {
        functions::prelu(x, &self.weight)
    }
}
