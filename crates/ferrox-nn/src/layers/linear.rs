//! Affine layers: [`Identity`], [`Linear`] and [`Bilinear`].

use super::{split_key, transposed};
use crate::init;
use crate::module::{Forward, Module, Param};
use ferrox::{ops, Array, Dtype, Error, Result};

/// Returns its input unchanged (a placeholder for a layer).
#[derive(Clone, Debug)]
pub struct Identity {
    training: bool,
}

impl Identity {
    /// The identity layer.
    pub fn new() -> Identity {
        Identity { training: true }
    }
}

impl Default for Identity {
    fn default() -> Identity {
        Identity::new()
    }
}

impl Module for Identity {
    entries!();
    training_flag!();
}

impl Forward for Identity {
    fn forward(&self, x: &Array) -> Result<Array> {
        Ok(x.clone())
    }
}

/// The bound `1 / sqrt(dims)` of the uniform initial values, refusing a
/// zero `dims` (named `what`) for `layer`.
fn init_scale(layer: &'static str, what: &str, dims: usize) -> Result<f64> {
    if dims == 0 {
        return Err(Error::invalid(layer, format!("{what} must be positive but got 0.")));
    }
    Ok((1.0 / dims as f64).sqrt())
}

/// `y = x W^T + b`, with `weight` `W` of shape `[output_dims, input_dims]`
/// and `bias` `b` of shape `[output_dims]`, both initialized from
/// `U(-k, k)`, `k = 1 / sqrt(input_dims)`.
#[derive(Clone, Debug)]
pub struct Linear {
    /// The weight, `[output_dims, input_dims]`.
    pub weight: Param,
    /// The bias, `[output_dims]`, when the layer has one.
    pub bias: Option<Param>,
    training: bool,
}

impl Linear {
    /// A layer from `input_dims` to `output_dims` features, with a bias
    /// when `bias`; the weight is drawn first, then the bias.
    pub fn new(input_dims: usize, output_dims: usize, bias: bool, key: Option<&Array>) -> Result<Linear> {
        let scale = init_scale("Linear", "input_dims", input_dims)?;
        let keys = split_key(key, 2)?;
        let weight = init::uniform(&[output_dims, input_dims], Dtype::F32, -scale, scale, keys[0].as_ref())?;
        let bias = match bias {
            true => Some(Param::new(init::uniform(&[output_dims], Dtype::F32, -scale, scale, keys[1].as_ref())?)),
            false => None,
        };
        Ok(Linear { weight: Param::new(weight), bias, training: true })
    }

    /// The size of the input features.
    pub fn input_dims(&self) -> usize {
        self.weight.shape()[1]
    }

    /// The size of the output features.
    pub fn output_dims(&self) -> usize {
        self.weight.shape()[0]
    }
}

impl Module for Linear {
    entries!("weight": param weight, "bias": opt bias);
    training_flag!();
}

impl Forward for Linear {
    fn forward(&self, x: &Array) -> Result<Array> {
        let wt = transposed(&self.weight)?;
        match &self.bias {
            Some(b) => ops::addmm(b, x, &wt, 1.0, 1.0),
            None => ops::matmul(x, &wt),
        }
    }
}

/// `y_i = x2^T W_i x1 + b_i`, with `weight` `W` of shape
/// `[output_dims, input2_dims, input1_dims]` and `bias` `b` of shape
/// `[output_dims]`, both initialized from `U(-k, k)`,
/// `k = 1 / sqrt(input1_dims)`.
#[derive(Clone, Debug)]
pub struct Bilinear {
    /// The weight, `[output_dims, input2_dims, input1_dims]`.
    pub weight: Param,
    /// The bias, `[output_dims]`, when the layer has one.
    pub bias: Option<Param>,
    training: bool,
}

impl Bilinear {
    /// A layer from `input1_dims` and `input2_dims` features to
    /// `output_dims`, with a bias when `bias`; the weight is drawn first.
    pub fn new(
        input1_dims: usize,
        input2_dims: usize,
        output_dims: usize,
        bias: bool,
        key: Option<&Array>,
    ) -> Result<Bilinear> {
        let scale = init_scale("Bilinear", "input1_dims", input1_dims)?;
        let keys = split_key(key, 2)?;
        let shape = [output_dims, input2_dims, input1_dims];
        let weight = init::uniform(&shape, Dtype::F32, -scale, scale, keys[0].as_ref())?;
        let bias = match bias {
            true => Some(Param::new(init::uniform(&[output_dims], Dtype::F32, -scale, scale, keys[1].as_ref())?)),
            false => None,
        };
        Ok(Bilinear { weight: Param::new(weight), bias, training: true })
    }

    /// The layer applied to `x1` (`[..., input1_dims]`) and `x2`
    /// (`[..., input2_dims]`, the same leading shape): `[..., output_dims]`.
    pub fn forward(&self, x1: &Array, x2: &Array) -> Result<Array> {
        let &[out, in2, in1] = self.weight.shape() else {
            return Err(Error::invalid("Bilinear", "The weight must have 3 dimensions."));
        };
        let (out, in2, in1) = (out as isize, in2 as isize, in1 as isize);
        let Some((_, lead)) = x1.shape().split_last() else {
            return Err(Error::invalid("Bilinear", "x1 must have at least 1 dimension."));
        };
        let x1 = x1.reshape(&[-1, in1])?;
        let x2 = x2.reshape(&[-1, 1, in2])?;
        // x1 W_i^T for every output i at once, then contracted with x2.
        let w = self.weight.reshape(&[out * in2, in1])?;
        let y = ops::matmul(&x1, &transposed(&w)?)?;
        let y = ops::swapaxes(&y.reshape(&[-1, out, in2])?, -2, -1)?;
        let y = ops::squeeze(&ops::matmul(&x2, &y)?, Some(&[1]))?;
        let mut shape: Vec<isize> = lead.iter().map(|&d| d as isize).collect();
        shape.push(out);
        let y = y.reshape(&shape)?;
        match &self.bias {
            Some(b) => ops::add(&y, b),
            None => Ok(y),
        }
    }
}

impl Module for Bilinear {
    entries!("weight": param weight, "bias": opt bias);
    training_flag!();
}
