//! Muon (MLX's `Muon`): SGD momentum whose update of each matrix (or
//! parameter flattened to one) is orthogonalized by Newton-Schulz steps.

use ferrox::{ops, Array, Error, Result, Scalar};

/// Muon's hyperparameters (MLX's defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Muon {
    /// The learning rate.
    pub learning_rate: f64,
    /// Momentum strength.
    pub momentum: f64,
    /// L2 penalty added to the gradient.
    pub weight_decay: f64,
    /// Nesterov momentum.
    pub nesterov: bool,
    /// Newton-Schulz iterations.
    pub ns_steps: usize,
}

impl Default for Muon {
    fn default() -> Muon {
        Muon { learning_rate: 1e-3, momentum: 0.95, weight_decay: 0.01, nesterov: true, ns_steps: 5 }
    }
}

fn float(value: f64, like: &Array) -> Result<Array> {
    ops::weak_scalar(Scalar::Float(value), like.dtype())
}

/// `x` (2-D) replaced by the nearest semi-orthogonal matrix, approximately:
/// MLX's quintic Newton-Schulz iteration on `x / ||x||`.
fn newton_schulz(x: &Array, steps: usize) -> Result<Array> {
    let (a, b, c) = (3.4445, -4.7750, 2.0315);
    let transposed = x.shape()[0] > x.shape()[1];
    let mut x = if transposed { x.transpose(None)? } else { x.clone() };
    let norm = ops::sqrt(&ops::sum(&ops::square(&x)?, None, true)?)?;
    x = ops::divide(&x, &ops::add(&norm, &float(1e-7, &norm)?)?)?;
    for _ in 0..steps {
        let gram = ops::matmul(&x, &x.transpose(None)?)?;
        let poly = ops::addmm(&ops::multiply(&float(b, &gram)?, &gram)?, &gram, &gram, c, 1.0)?;
        x = ops::addmm(&ops::multiply(&float(a, &x)?, &x)?, &poly, &x, 1.0, 1.0)?;
    }
    if transposed {
        x = x.transpose(None)?;
    }
    Ok(x)
}

/// One Muon step (MLX's `Muon.apply_single`): returns the new parameter
/// and the new momentum `v` (`states` is `[v]`).
pub fn muon_update(
    cfg: &Muon,
    parameter: &Array,
    gradient: &Array,
    states: &[Array],
    learning_rate: &Array,
) -> Result<Vec<Array>> {
    const OP: &str = "Muon";
    if states.len() != 1 || gradient.shape() != parameter.shape() {
        return Err(Error::invalid(OP, "takes a gradient of the parameter's shape and one state, v."));
    }
    let mut gradient = gradient.clone();
    if cfg.weight_decay != 0.0 {
        gradient = ops::add(&gradient, &ops::multiply(&float(cfg.weight_decay, parameter)?, parameter)?)?;
    }
    let v = ops::add(
        &ops::multiply(&float(cfg.momentum, &states[0])?, &states[0])?,
        &ops::multiply(&float(1.0 - cfg.momentum, &gradient)?, &gradient)?,
    )?;
    let mut update = if cfg.nesterov {
        ops::add(
            &ops::multiply(&gradient, &float(1.0 - cfg.momentum, &gradient)?)?,
            &ops::multiply(&v, &float(cfg.momentum, &v)?)?,
        )?
    } else {
        v.clone()
    };
    let mut lr = learning_rate.astype(gradient.dtype())?;
    if update.ndim() >= 2 {
        let shape = update.shape().to_vec();
        let flat = if shape.len() > 2 { update.reshape(&[shape[0] as isize, -1])? } else { update };
        let orthogonal = newton_schulz(&flat, cfg.ns_steps)?;
        update = orthogonal.reshape(&shape.iter().map(|&d| d as isize).collect::<Vec<_>>())?;
        let (rows, cols) = (shape[shape.len() - 2] as f64, shape[shape.len() - 1] as f64);
        lr = ops::multiply(&lr, &float((rows / cols).max(1.0).sqrt(), &lr)?)?;
    }
    Ok(vec![ops::subtract(parameter, &ops::multiply(&lr, &update)?)?, v])
}
