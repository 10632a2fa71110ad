//! Recurrent layers: [`RNN`], [`GRU`] and [`LSTM`], with MLX's parameter
//! names (`Wxh`, `Wx`, `bhn`, ...) and gate layouts.
//!
//! Each takes an input of shape `[N, L, D]` or `[L, D]` and returns the
//! hidden state after every step (`[N, L, H]` or `[L, H]`). Parameters
//! are initialized from `U(-k, k)`, `k = 1 / sqrt(H)`, in declaration order.

use super::{split_key, transposed, Activation};
use crate::init;
use crate::int;
use crate::module::{Forward, Module, Param};
use ferrox::ops::{self, Index, SplitSpec};
use ferrox::{Array, Dtype, Error, Result};

/// `U(-scale, scale)` samples of `shape` (float32).
fn draw(shape: &[usize], scale: f64, key: &Option<Array>) -> Result<Param> {
    Ok(Param::new(init::uniform(shape, Dtype::F32, -scale, scale, key.as_ref())?))
}

/// `1 / sqrt(hidden_size)`, refusing a zero size for `layer`.
fn init_scale(layer: &'static str, hidden_size: usize) -> Result<f64> {
    if hidden_size == 0 {
        return Err(Error::invalid(layer, "hidden_size must be positive but got 0."));
    }
    Ok(1.0 / (hidden_size as f64).sqrt())
}

/// `x W^T + b` (`b` when given).
fn project(x: &Array, w: &Array, b: Option<&Array>) -> Result<Array> {
    let wt = transposed(w)?;
    match b {
        Some(b) => ops::addmm(b, x, &wt, 1.0, 1.0),
        None => ops::matmul(x, &wt),
    }
}

/// The number of steps of `x` (its axis -2), refusing fewer than 2
/// dimensions or no step for `layer`.
fn steps(layer: &'static str, x: &Array) -> Result<usize> {
    if x.ndim() < 2 {
        return Err(Error::invalid(
            layer,
            format!("Expected an input of shape [N, L, D] or [L, D] but got {} dimensions.", x.ndim()),
        ));
    }
    match x.shape()[x.ndim() - 2] {
        0 => Err(Error::invalid(layer, "The input sequence is empty (L = 0).")),
        n => Ok(n),
    }
}

/// `x[..., t, :]`.
fn step(x: &Array, t: usize) -> Result<Array> {
    ops::index(x, &[Index::Ellipsis, Index::Int(t as i64), Index::Slice { start: None, stop: None, step: None }])
}

/// `x[..., start:stop]`.
fn features(x: &Array, start: Option<i64>, stop: Option<i64>) -> Result<Array> {
    ops::index(x, &[Index::Ellipsis, Index::Slice { start, stop, step: None }])
}

/// An Elman recurrent layer: `h_{t+1} = nonlinearity(W_xh x_t + W_hh h_t + b)`.
#[derive(Clone, Debug)]
pub struct RNN {
    /// The input weight `Wxh`, `[H, D]`.
    pub wxh: Param,
    /// The recurrent weight `Whh`, `[H, H]`.
    pub whh: Param,
    /// The bias, `[H]`, when the layer has one.
    pub bias: Option<Param>,
    nonlinearity: Activation,
    training: bool,
}

impl RNN {
    /// A layer from `input_size` features to a state of `hidden_size`, with
    /// a bias when `bias`, applying `nonlinearity` (tanh when `None`).
    pub fn new(
        input_size: usize,
        hidden_size: usize,
        bias: bool,
        nonlinearity: Option<Activation>,
        key: Option<&Array>,
    ) -> Result<RNN> {
        let scale = init_scale("RNN", hidden_size)?;
        let keys = split_key(key, 3)?;
        Ok(RNN {
            wxh: draw(&[hidden_size, input_size], scale, &keys[0])?,
            whh: draw(&[hidden_size, hidden_size], scale, &keys[1])?,
            bias: if bias { Some(draw(&[hidden_size], scale, &keys[2])?) } else { None },
            nonlinearity: nonlinearity.unwrap_or(ops::tanh),
            training: true,
        })
    }

    /// The hidden states of every step, starting from `hidden` (`[N, H]`
    /// or `[H]`; zeros when `None`).
    pub fn forward_with(&self, x: &Array, hidden: Option<&Array>) -> Result<Array> {
        let length = steps("RNN", x)?;
        let x = project(x, &self.wxh, self.bias.as_deref())?;
        let whh_t = transposed(&self.whh)?;
        let mut hidden = hidden.cloned();
        let mut states = Vec::with_capacity(length);
        for t in 0..length {
            let xt = step(&x, t)?;
            let pre = match &hidden {
                Some(h) => ops::addmm(&xt, h, &whh_t, 1.0, 1.0)?,
                None => xt,
            };
            let h = (self.nonlinearity)(&pre)?;
            states.push(h.clone());
            hidden = Some(h);
        }
        ops::stack(&states, -2)
    }
}

impl Module for RNN {
    entries!("Wxh": param wxh, "Whh": param whh, "bias": opt bias);
    training_flag!();
}

impl Forward for RNN {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_with(x, None)
    }
}

/// A gated recurrent unit layer:
///
/// ```text
/// r = sigmoid(W_xr x + W_hr h + b_r)
/// z = sigmoid(W_xz x + W_hz h + b_z)
/// n = tanh(W_xn x + b_n + r * (W_hn h + b_hn))
/// h' = (1 - z) * n + z * h
/// ```
#[derive(Clone, Debug)]
pub struct GRU {
    /// The input weights `Wx`, `[3H, D]` (rows: r, z, n).
    pub wx: Param,
    /// The recurrent weights `Wh`, `[3H, H]` (rows: r, z, n).
    pub wh: Param,
    /// The input bias `b`, `[3H]`, when the layer has biases.
    pub b: Option<Param>,
    /// The bias `bhn` of `W_hn h`, `[H]`, when the layer has biases.
    pub bhn: Option<Param>,
    hidden_size: usize,
    training: bool,
}

impl GRU {
    /// A layer from `input_size` features to a state of `hidden_size`, with
    /// biases when `bias`.
    pub fn new(input_size: usize, hidden_size: usize, bias: bool, key: Option<&Array>) -> Result<GRU> {
        let scale = init_scale("GRU", hidden_size)?;
        let keys = split_key(key, 4)?;
        let h = hidden_size;
        Ok(GRU {
            wx: draw(&[3 * h, input_size], scale, &keys[0])?,
            wh: draw(&[3 * h, h], scale, &keys[1])?,
            b: if bias { Some(draw(&[3 * h], scale, &keys[2])?) } else { None },
            bhn: if bias { Some(draw(&[h], scale, &keys[3])?) } else { None },
            hidden_size,
            training: true,
        })
    }

    /// The hidden states of every step, starting from `hidden` (`[N, H]`
    /// or `[H]`; zeros when `None`).
    pub fn forward_with(&self, x: &Array, hidden: Option<&Array>) -> Result<Array> {
        let length = steps("GRU", x)?;
        let h = self.hidden_size as i64;
        let x = project(x, &self.wx, self.b.as_deref())?;
        let (x_rz, x_n) = (features(&x, None, Some(-h))?, features(&x, Some(-h), None)?);
        let wh_t = transposed(&self.wh)?;
        let mut hidden = hidden.cloned();
        let mut states = Vec::with_capacity(length);
        for t in 0..length {
            let mut rz = step(&x_rz, t)?;
            let mut h_proj_n = None;
            if let Some(prev) = &hidden {
                let h_proj = ops::matmul(prev, &wh_t)?;
                let mut proj_n = features(&h_proj, Some(-h), None)?;
                if let Some(bhn) = &self.bhn {
                    proj_n = ops::add(&proj_n, bhn)?;
                }
                rz = ops::add(&rz, &features(&h_proj, None, Some(-h))?)?;
                h_proj_n = Some(proj_n);
            }
            let gates = ops::split(&ops::sigmoid(&rz)?, &SplitSpec::Sections(2), -1)?;
            let (r, z) = (&gates[0], &gates[1]);
            let mut n = step(&x_n, t)?;
            match (&h_proj_n, &self.bhn) {
                (Some(p), _) => n = ops::add(&n, &ops::multiply(r, p)?)?,
                (None, Some(bhn)) => n = ops::add(&n, &ops::multiply(r, bhn)?)?,
                (None, None) => {}
            }
            let n = ops::tanh(&n)?;
            let kept = ops::multiply(&ops::subtract(&int(1, z)?, z)?, &n)?;
            let next = match &hidden {
                Some(prev) => ops::add(&kept, &ops::multiply(z, prev)?)?,
                None => kept,
            };
            states.push(next.clone());
            hidden = Some(next);
        }
        ops::stack(&states, -2)
    }
}

impl Module for GRU {
    entries!("Wx": param wx, "Wh": param wh, "b": opt b, "bhn": opt bhn);
    training_flag!();
}

impl Forward for GRU {
    fn forward(&self, x: &Array) -> Result<Array> {
        self.forward_with(x, None)
    }
}

/// A long short-term memory layer:
///
/// ```text
/// i = sigmoid(W_xi x + W_hi h + b_i)
/// f = sigmoid(W_xf x + W_hf h + b_f)
/// g = tanh(W_xg x + W_hg h + b_g)
/// o = sigmoid(W_xo x + W_ho h + b_o)
/// c' = f * c + i * g
/// h' = o * tanh(c')
/// ```
#[derive(Clone, Debug)]
pub struct LSTM {
    /// The input weights `Wx`, `[4H, D]` (rows: i, f, g, o).
    pub wx: Param,
    /// The recurrent weights `Wh`, `[4H, H]` (rows: i, f, g, o).
    pub wh: Param,
    /// The bias, `[4H]`, when the layer has one.
    pub bias: Option<Param>,
    training: bool,
}

impl LSTM {
    /// A layer from `input_size` features to states of `hidden_size`, with
    /// a bias when `bias`.
    pub fn new(input_size: usize, hidden_size: usize, bias: bool, key: Option<&Array>) -> Result<LSTM> {
        let scale = init_scale("LSTM", hidden_size)?;
        let keys = split_key(key, 3)?;
        let h = hidden_size;
        Ok(LSTM {
            wx: draw(&[4 * h, input_size], scale, &keys[0])?,
            wh: draw(&[4 * h, h], scale, &keys[1])?,
            bias: if bias { Some(draw(&[4 * h], scale, &keys[2])?) } else { None },
            training: true,
        })
    }

    /// The hidden and cell states of every step, starting from `hidden`
    /// and `cell` (`[N, H]` or `[H]`; zeros when `None`).
    pub fn forward(&self, x: &Array, hidden: Option<&Array>, cell: Option<&Array>) -> Result<(Array, Array)> {
        let length = steps("LSTM", x)?;
        let x = project(x, &self.wx, self.bias.as_deref())?;
        let wh_t = transposed(&self.wh)?;
        let (mut hidden, mut cell) = (hidden.cloned(), cell.cloned());
        let (mut hiddens, mut cells) = (Vec::with_capacity(length), Vec::with_capacity(length));
        for t in 0..length {
            let mut ifgo = step(&x, t)?;
            if let Some(h) = &hidden {
                ifgo = ops::addmm(&ifgo, h, &wh_t, 1.0, 1.0)?;
            }
            let gates = ops::split(&ifgo, &SplitSpec::Sections(4), -1)?;
            let i = ops::sigmoid(&gates[0])?;
            let f = ops::sigmoid(&gates[1])?;
            let g = ops::tanh(&gates[2])?;
            let o = ops::sigmoid(&gates[3])?;
            let input = ops::multiply(&i, &g)?;
            let c = match &cell {
                Some(c) => ops::add(&ops::multiply(&f, c)?, &input)?,
                None => input,
            };
            let h = ops::multiply(&o, &ops::tanh(&c)?)?;
            hiddens.push(h.clone());
            cells.push(c.clone());
            hidden = Some(h);
            cell = Some(c);
        }
        Ok((ops::stack(&hiddens, -2)?, ops::stack(&cells, -2)?))
    }
}

impl Module for LSTM {
    entries!("Wx": param wx, "Wh": param wh, "bias": opt bias);
    training_flag!();
}
