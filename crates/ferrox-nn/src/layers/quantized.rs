//! Quantized layers (MLX's `mlx.nn.layers.quantized`): [`QuantizedLinear`]
//! and [`QuantizedEmbedding`], made fresh or from a [`Linear`] or an
//! [`Embedding`] (`to_quantized`). Their parameters have MLX's names and
//! shapes (`weight` packed into uint32, `scales`, and `biases` in the affine
//! mode), so weights of models MLX quantized load into them.

use super::{Embedding, Linear};
use crate::module::{Forward, Module, Param};
use ferrox::{ops, Array, Dtype, Error, Result};

/// How a layer's weight is quantized: the mode (`"affine"`, `"mxfp4"`,
/// `"mxfp8"`, `"nvfp4"`), the group size and the bits per weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quantization {
    /// The mode.
    pub mode: String,
    /// How many weights share a scale (and bias).
    pub group_size: i32,
    /// The bits per weight.
    pub bits: i32,
}

impl Quantization {
    /// `mode` with the group size and bits given, or the mode's defaults
    /// (MLX's: affine 64 and 4, mxfp4 32 and 4, nvfp4 16 and 4, mxfp8 32 and 8).
    pub fn new(mode: &str, group_size: Option<i32>, bits: Option<i32>) -> Result<Quantization> {
        let (default_group_size, default_bits) = match mode {
            "affine" => (64, 4),
            "mxfp4" => (32, 4),
            "nvfp4" => (16, 4),
            "mxfp8" => (32, 8),
            _ => {
                return Err(Error::invalid(
                    "quantize",
                    format!("Invalid quantization mode '{mode}'. Valid modes are: affine, mxfp4, nvfp4, mxfp8."),
                ))
            }
        };
        Ok(Quantization {
            mode: mode.to_string(),
            group_size: group_size.unwrap_or(default_group_size),
            bits: bits.unwrap_or(default_bits),
        })
    }

    /// `weight` quantized: the packed weight, the scales and (affine) the
    /// biases, all frozen.
    fn quantize(&self, weight: &Array) -> Result<(Param, Param, Option<Param>)> {
        let mut parts = ops::quantize(weight, Some(self.group_size), Some(self.bits), &self.mode, None)?.into_iter();
        let frozen = |a: Array| {
            let mut p = Param::new(a);
            p.set_frozen(true);
            p
        };
        let packed = frozen(parts.next().expect("quantize gives the packed weight"));
        let scales = frozen(parts.next().expect("quantize gives the scales"));
        Ok((packed, scales, parts.next().map(frozen)))
    }

    /// `x` times the transpose of the matrix `weight` quantized this way
    /// (with its `scales` and affine `biases`).
    fn times_transposed(&self, x: &Array, weight: &Array, scales: &Array, biases: Option<&Array>) -> Result<Array> {
        ops::quantized_matmul(x, weight, scales, biases, true, Some(self.group_size), Some(self.bits), &self.mode)
    }
}

/// `y = x Ŵ^T + b` with `Ŵ` the quantized weight (`[output_dims,
/// input_dims]` before packing). The quantized parameters are frozen; a
/// bias taken over from a [`Linear`] stays trainable (as in MLX).
#[derive(Clone, Debug)]
pub struct QuantizedLinear {
    /// The packed weight, `[output_dims, input_dims * bits / 32]` (uint32).
    pub weight: Param,
    /// The scales, one per group of `group_size` weights of a row.
    pub scales: Param,
    /// The affine mode's biases (shaped as `scales`).
    pub biases: Option<Param>,
    /// The bias, `[output_dims]`, when the layer has one.
    pub bias: Option<Param>,
    /// How the weight is quantized.
    pub quantization: Quantization,
    training: bool,
}

impl QuantizedLinear {
    /// A layer from `input_dims` to `output_dims` features with a weight
    /// drawn as [`Linear`]'s (then quantized) and, when `bias`, a zero bias
    /// (frozen, as MLX's).
    pub fn new(
        input_dims: usize,
        output_dims: usize,
        bias: bool,
        quantization: Quantization,
        key: Option<&Array>,
    ) -> Result<QuantizedLinear> {
        if input_dims == 0 {
            return Err(Error::invalid("QuantizedLinear", "input_dims must be positive but got 0."));
        }
        let mut layer = QuantizedLinear::from_linear(&Linear::new(input_dims, output_dims, false, key)?, quantization)?;
        if bias {
            let mut zeros = Param::new(ops::zeros(&[output_dims], Dtype::F32)?);
            zeros.set_frozen(true);
            layer.bias = Some(zeros);
        }
        Ok(layer)
    }

    /// `linear` with its weight quantized; its bias is kept (trainable).
    pub fn from_linear(linear: &Linear, quantization: Quantization) -> Result<QuantizedLinear> {
        let (weight, scales, biases) = quantization.quantize(&linear.weight)?;
        let bias = linear.bias.as_ref().map(|b| Param::new(b.array().clone()));
        Ok(QuantizedLinear { weight, scales, biases, bias, quantization, training: linear.training() })
    }
}

impl Module for QuantizedLinear {
    entries!("weight": param weight, "scales": param scales, "biases": opt biases, "bias": opt bias);
    training_flag!();
}

impl Forward for QuantizedLinear {
    fn forward(&self, x: &Array) -> Result<Array> {
        let y = self.quantization.times_transposed(x, &self.weight, &self.scales, self.biases.as_deref())?;
        match &self.bias {
            Some(b) => ops::add(&y, b),
            None => Ok(y),
        }
    }
}

/// [`Embedding`] with a quantized (frozen) table: ids look up and
/// dequantize their rows.
#[derive(Clone, Debug)]
pub struct QuantizedEmbedding {
    /// The packed table, `[num_embeddings, dims * bits / 32]` (uint32).
    pub weight: Param,
    /// The scales, one per group of `group_size` entries of a row.
    pub scales: Param,
    /// The affine mode's biases (shaped as `scales`).
    pub biases: Option<Param>,
    /// How the table is quantized.
    pub quantization: Quantization,
    training: bool,
}

impl QuantizedEmbedding {
    /// A table of `num_embeddings` vectors of size `dims`, drawn as
    /// [`Embedding`]'s, then quantized.
    pub fn new(
        num_embeddings: usize,
        dims: usize,
        quantization: Quantization,
        key: Option<&Array>,
    ) -> Result<QuantizedEmbedding> {
        if dims == 0 {
            return Err(Error::invalid("QuantizedEmbedding", "dims must be positive but got 0."));
        }
        QuantizedEmbedding::from_embedding(&Embedding::new(num_embeddings, dims, key)?, quantization)
    }

    /// `embedding` with its table quantized.
    pub fn from_embedding(embedding: &Embedding, quantization: Quantization) -> Result<QuantizedEmbedding> {
        let (weight, scales, biases) = quantization.quantize(&embedding.weight)?;
        Ok(QuantizedEmbedding { weight, scales, biases, quantization, training: embedding.training() })
    }

    /// `x` times the transposed (quantized) table: the embedding used as an
    /// output projection (tied input and output embeddings).
    pub fn as_linear(&self, x: &Array) -> Result<Array> {
        self.quantization.times_transposed(x, &self.weight, &self.scales, self.biases.as_deref())
    }
}

impl Module for QuantizedEmbedding {
    entries!("weight": param weight, "scales": param scales, "biases": opt biases);
    training_flag!();
}

impl Forward for QuantizedEmbedding {
    /// The dequantized rows at the integer ids `x`: shape `x.shape + [dims]`.
    fn forward(&self, x: &Array) -> Result<Array> {
        if !x.dtype().is_integer() {
            return Err(Error::InvalidType {
                op: "QuantizedEmbedding",
                msg: format!("Indices must be integers but got {}.", x.dtype()),
            });
        }
        let rows = |p: &Param| ops::take(p, x, Some(0));
        let biases = self.biases.as_ref().map(rows).transpose()?;
        let q = &self.quantization;
        ops::dequantize(
            &rows(&self.weight)?,
            &rows(&self.scales)?,
            biases.as_ref(),
            Some(q.group_size),
            Some(q.bits),
            &q.mode,
            None,
            None,
        )
    }
}

impl Linear {
    /// This layer with its weight quantized (MLX's `to_quantized`).
    pub fn to_quantized(&self, quantization: Quantization) -> Result<QuantizedLinear> {
        QuantizedLinear::from_linear(self, quantization)
    }
}

impl Embedding {
    /// This layer with its table quantized (MLX's `to_quantized`).
    pub fn to_quantized(&self, quantization: Quantization) -> Result<QuantizedEmbedding> {
        QuantizedEmbedding::from_embedding(self, quantization)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrox::random;

    fn close(a: &Array, b: &Array, tol: f32) {
        let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() <= tol, "{x} vs {y}");
        }
    }

    #[test]
    fn quantized_linear_is_the_product_with_the_dequantized_weight() -> Result<()> {
        let key = random::key(3)?;
        let linear = Linear::new(128, 16, true, Some(&key))?;
        for q in [Quantization::new("affine", Some(32), Some(8))?, Quantization::new("mxfp8", None, None)?] {
            let ql = linear.to_quantized(q.clone())?;
            let names: Vec<String> = ql.parameters().into_keys().collect();
            let want: &[&str] = if q.mode == "affine" {
                &["bias", "biases", "scales", "weight"]
            } else {
                &["bias", "scales", "weight"]
            };
            assert_eq!(names, want);
            // Only the bias taken over from the Linear trains (as in MLX).
            assert_eq!(ql.trainable_parameters().into_keys().collect::<Vec<_>>(), ["bias"]);
            let x = random::normal(&[3, 128], Dtype::F32, None, None, Some(&key))?;
            let w = ops::dequantize(
                &ql.weight,
                &ql.scales,
                ql.biases.as_deref(),
                Some(q.group_size),
                Some(q.bits),
                &q.mode,
                None,
                Some(Dtype::F32),
            )?;
            let want = ops::add(&ops::matmul(&x, &ops::swapaxes(&w, -1, -2)?)?, linear.bias.as_deref().unwrap())?;
            close(&ql.forward(&x)?, &want, 1e-4);
        }
        Ok(())
    }

    #[test]
    fn quantized_embedding_looks_up_dequantized_rows() -> Result<()> {
        let key = random::key(5)?;
        let table = Embedding::new(20, 64, Some(&key))?;
        let qe = table.to_quantized(Quantization::new("affine", Some(32), Some(4))?)?;
        assert!(qe.trainable_parameters().is_empty());
        let full =
            ops::dequantize(&qe.weight, &qe.scales, qe.biases.as_deref(), Some(32), Some(4), "affine", None, None)?;
        let ids = Array::from_vec(vec![3i32, 0, 19, 3], &[2, 2])?;
        let rows = qe.forward(&ids)?;
        assert_eq!(rows.shape(), &[2, 2, 64]);
        close(&rows, &ops::take(&full, &ids, Some(0))?, 0.0);
        let x = random::normal(&[2, 64], Dtype::F32, None, None, Some(&key))?;
        close(&qe.as_linear(&x)?, &ops::matmul(&x, &ops::swapaxes(&full, -1, -2)?)?, 1e-4);
        let linear = QuantizedLinear::new(64, 8, true, Quantization::new("affine", None, None)?, Some(&key))?;
        assert_eq!(linear.weight.shape(), &[8, 8]);
        assert!(linear.trainable_parameters().is_empty()); // the fresh zero bias is frozen too
        assert!(QuantizedLinear::new(0, 8, true, Quantization::new("affine", None, None)?, None).is_err());
        let fresh = QuantizedEmbedding::new(10, 32, Quantization::new("nvfp4", None, None)?, Some(&key))?;
        assert_eq!(fresh.scales.shape(), &[10, 2]);
        assert!(Quantization::new("int4", None, None).is_err());
        Ok(())
    }
}
