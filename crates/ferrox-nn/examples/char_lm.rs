//! A small character-level transformer language model, trained with AdamW.
//!
//! Token embeddings plus sinusoidal positions feed two causal
//! `TransformerEncoderLayer` blocks and a final `LayerNorm`; the output
//! projection reuses the embedding table (`Embedding::as_linear`). The loss
//! is `cross_entropy` of the next character; gradients come from
//! `module::value_and_grad`, updates from `optim::AdamW`.
//!
//! ```text
//! cargo run --release -p ferrox-nn --example char_lm [TEXT_FILE] [STEPS]
//! ```
//!
//! Without a file it trains on the repository's demo text
//! (`examples/data/tinyshakespeare.txt`) when present, else on a short
//! built-in text. It prints the loss every few steps and finishes with a
//! sample of generated text.

use ferrox::{ops, random, Array, Dtype, Result};
use ferrox_nn::functions;
use ferrox_nn::layers::{
    Embedding, LayerNorm, MultiHeadAttention, SinusoidalPositionalEncoding, TransformerEncoderLayer, TransformerOptions,
};
use ferrox_nn::losses::{cross_entropy, Reduction};
use ferrox_nn::module::{value_and_grad, Entry, EntryMut, Forward, Module};
use ferrox_nn::optim::{AdamW, Optimizer};
use std::time::Instant;

const DIMS: usize = 64;
const HEADS: usize = 4;
const LAYERS: usize = 2;
const CONTEXT: usize = 64;
const BATCH: usize = 32;
const DEFAULT_STEPS: usize = 1200;
const PRINT_EVERY: usize = 100;

const BUILTIN_TEXT: &str = "\
It is a truth universally acknowledged, that a single man in possession of a good fortune, \
must be in want of a wife. However little known the feelings or views of such a man may be \
on his first entering a neighbourhood, this truth is so well fixed in the minds of the \
surrounding families, that he is considered the rightful property of some one or other of \
their daughters. My dear Mr. Bennet, said his lady to him one day, have you heard that \
Netherfield Park is let at last? Mr. Bennet replied that he had not. But it is, returned \
she; for Mrs. Long has just been here, and she told me all about it. Mr. Bennet made no \
answer. Do you not want to know who has taken it? cried his wife impatiently. You want to \
tell me, and I have no objection to hearing it. This was invitation enough.\n";

/// The model: embeddings, positions, causal blocks, a final norm, and the
/// embedding table as the output projection.
struct CharLm {
    embed: Embedding,
    positions: SinusoidalPositionalEncoding,
    blocks: Vec<TransformerEncoderLayer>,
    ln: LayerNorm,
}

impl CharLm {
    fn new(vocab: usize, key: &Array) -> Result<CharLm> {
        let keys = random::split(key, LAYERS + 1)?;
        let key_at = |i: usize| ops::index(&keys, &[ops::Index::Int(i as i64)]);
        let options = TransformerOptions { activation: functions::gelu, ..Default::default() };
        let blocks = (0..LAYERS)
            .map(|i| TransformerEncoderLayer::new(DIMS, HEADS, &options, Some(&key_at(i + 1)?)))
            .collect::<Result<_>>()?;
        Ok(CharLm {
            embed: Embedding::new(vocab, DIMS, Some(&key_at(0)?))?,
            positions: SinusoidalPositionalEncoding::new(DIMS)?,
            blocks,
            ln: LayerNorm::new(DIMS)?,
        })
    }

    /// Next-character logits for `tokens` (`[B, L]` int32): `[B, L, vocab]`.
    fn logits(&self, tokens: &Array) -> Result<Array> {
        let length = tokens.shape()[1];
        let steps = ops::arange(0.0, length as f64, 1.0, Dtype::F32)?;
        let mut h = ops::add(&self.embed.forward(tokens)?, &self.positions.forward(&steps)?)?;
        let mask = MultiHeadAttention::create_additive_causal_mask(length, Dtype::F32)?;
        for block in &self.blocks {
            h = block.forward(&h, Some(&mask))?;
        }
        self.embed.as_linear(&self.ln.forward(&h)?)
    }

    /// The mean cross entropy of predicting `targets` from `tokens`.
    fn loss(&self, tokens: &Array, targets: &Array) -> Result<Array> {
        cross_entropy(&self.logits(tokens)?, targets, None, -1, 0.0, Reduction::Mean)
    }
}

impl Module for CharLm {
    fn visit_entries(&self, f: &mut dyn FnMut(&str, Entry<'_>)) {
        f("embed", Entry::Module(&self.embed));
        for (i, block) in self.blocks.iter().enumerate() {
            f(&format!("blocks.{i}"), Entry::Module(block));
        }
        f("ln", Entry::Module(&self.ln));
    }

    fn visit_entries_mut(&mut self, f: &mut dyn FnMut(&str, EntryMut<'_>)) {
        f("embed", EntryMut::Module(&mut self.embed));
        for (i, block) in self.blocks.iter_mut().enumerate() {
            f(&format!("blocks.{i}"), EntryMut::Module(block));
        }
        f("ln", EntryMut::Module(&mut self.ln));
    }
}

/// A small deterministic generator for batch positions.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// A batch of `BATCH` windows of `data`: inputs and next-character targets.
fn batch(data: &[i32], rng: &mut Lcg) -> Result<(Array, Array)> {
    let (mut inputs, mut targets) = (Vec::with_capacity(BATCH * CONTEXT), Vec::with_capacity(BATCH * CONTEXT));
    for _ in 0..BATCH {
        let start = rng.below(data.len() - CONTEXT);
        inputs.extend_from_slice(&data[start..start + CONTEXT]);
        targets.extend_from_slice(&data[start + 1..start + CONTEXT + 1]);
    }
    Ok((Array::from_vec(inputs, &[BATCH, CONTEXT])?, Array::from_vec(targets, &[BATCH, CONTEXT])?))
}

/// `count` characters sampled from the model after `prompt`, at
/// temperature 0.8.
fn sample(model: &CharLm, vocab: &[char], prompt: &[i32], count: usize, key: &Array) -> Result<String> {
    let mut tokens = prompt.to_vec();
    let keys = random::split(key, count)?;
    for i in 0..count {
        let window = &tokens[tokens.len().saturating_sub(CONTEXT)..];
        let logits = model.logits(&Array::from_slice(window, &[1, window.len()])?)?;
        let last = ops::index(&logits, &[ops::Index::Int(0), ops::Index::Int(-1)])?;
        let k = ops::index(&keys, &[ops::Index::Int(i as i64)])?;
        let next = random::categorical(&(&last / 0.8)?, -1, random::Draws::One, Some(&k))?;
        tokens.push(next.astype(Dtype::I32)?.item::<i32>()?);
    }
    Ok(tokens[prompt.len()..].iter().map(|&t| vocab[t as usize]).collect())
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/data/tinyshakespeare.txt");
    let (source, text) = match args.get(1) {
        Some(path) => (path.clone(), std::fs::read_to_string(path)?),
        None => match std::fs::read_to_string(demo) {
            Ok(text) => ("examples/data/tinyshakespeare.txt".to_string(), text),
            Err(_) => ("the built-in text".to_string(), BUILTIN_TEXT.to_string()),
        },
    };
    let steps: usize = match args.get(2) {
        Some(s) => s.parse()?,
        None => DEFAULT_STEPS,
    };
    let mut vocab: Vec<char> = text.chars().collect();
    vocab.sort_unstable();
    vocab.dedup();
    let data: Vec<i32> = text.chars().map(|c| vocab.binary_search(&c).unwrap_or(0) as i32).collect();
    if data.len() <= CONTEXT + 1 {
        return Err(format!("{source} is too short: it needs more than {} characters", CONTEXT + 1).into());
    }
    println!("training on {source}: {} characters, {} distinct", data.len(), vocab.len());

    let mut model = CharLm::new(vocab.len(), &random::key(0)?)?;
    let count: usize = model.parameters().values().map(Array::size).sum();
    println!("model: {count} parameters; {steps} steps of {BATCH} x {CONTEXT} characters");
    let mut opt = Optimizer::new(AdamW { learning_rate: 3e-3, ..Default::default() });
    let mut rng = Lcg(0);
    let start = Instant::now();
    let mut running = None;
    for step in 1..=steps {
        let (inputs, targets) = batch(&data, &mut rng)?;
        let (loss, grads) = value_and_grad(&mut model, |m| m.loss(&inputs, &targets))?;
        let mut params = model.trainable_parameters();
        opt.update(&mut params, &grads)?;
        model.update(&params)?;
        ferrox::eval(params.values().chain([&loss]))?;
        let loss = loss.item::<f32>()? as f64;
        let smoothed = running.map_or(loss, |r: f64| 0.9 * r + 0.1 * loss);
        running = Some(smoothed);
        if step == 1 || step % PRINT_EVERY == 0 || step == steps {
            let rate = (step * BATCH * CONTEXT) as f64 / start.elapsed().as_secs_f64();
            println!("step {step:4}  loss {loss:.3}  (smoothed {smoothed:.3})  {rate:.0} tokens/s");
        }
    }
    let uniform = (vocab.len() as f64).ln();
    println!("a uniform guess scores {uniform:.3}; trained in {:.1}s", start.elapsed().as_secs_f64());

    model.train(false);
    let prompt = &data[..CONTEXT.min(data.len())];
    let prompt_text: String = prompt.iter().map(|&t| vocab[t as usize]).collect();
    let generated = sample(&model, &vocab, prompt, 200, &random::key(1)?)?;
    println!("--- sample ---\n{prompt_text}{generated}");
    Ok(())
}
