//! The module system: parameter trees of user structs, strict updates,
//! freezing, training mode, dtype casts, weight files, and gradients of a
//! small model through `value_and_grad` against finite differences.

use ferrox::{ops, random, Array, Dtype};
use ferrox_nn::layers::*;
use ferrox_nn::losses::{cross_entropy, Reduction};
use ferrox_nn::module::{value_and_grad, Entry, EntryMut, Forward, Module, Param, Params};
use std::path::PathBuf;

fn key(seed: u64) -> Array {
    random::key(seed).unwrap()
}

fn get(a: &Array) -> Vec<f64> {
    a.astype(Dtype::F64).unwrap().to_vec::<f64>().unwrap()
}

fn keys(p: &Params) -> Vec<&str> {
    p.keys().map(String::as_str).collect()
}

/// A scratch path unique to this process and `name`.
fn scratch(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("ferrox_nn_module_{}_{name}", std::process::id()))
}

/// A user model: its own parameter, layers, and a nested container.
struct Net {
    scale: Param,
    steps: Param,
    fc1: Linear,
    drop: Dropout,
    head: Sequential,
}

impl Net {
    fn new(seed: u64) -> Net {
        let (k1, k2) = random::split_pair(&key(seed)).unwrap();
        Net {
            scale: Param::new(ops::ones(&[3], Dtype::F32).unwrap()),
            steps: Param::new(Array::from_slice(&[1i32, 2], &[2]).unwrap()),
            fc1: Linear::new(3, 4, true, Some(&k1)).unwrap(),
            drop: Dropout::new(0.5).unwrap(),
            head: Sequential::new().push(ReLU::new()).push(Linear::new(4, 2, false, Some(&k2)).unwrap()),
        }
    }
}

impl Module for Net {
    fn visit_entries(&self, f: &mut dyn FnMut(&str, Entry<'_>)) {
        f("scale", Entry::Param(&self.scale));
        f("steps", Entry::Param(&self.steps));
        f("fc1", Entry::Module(&self.fc1));
        f("drop", Entry::Module(&self.drop));
        f("head", Entry::Module(&self.head));
    }

    fn visit_entries_mut(&mut self, f: &mut dyn FnMut(&str, EntryMut<'_>)) {
        f("scale", EntryMut::Param(&mut self.scale));
        f("steps", EntryMut::Param(&mut self.steps));
        f("fc1", EntryMut::Module(&mut self.fc1));
        f("drop", EntryMut::Module(&mut self.drop));
        f("head", EntryMut::Module(&mut self.head));
    }
}

impl Forward for Net {
    fn forward(&self, x: &Array) -> ferrox::Result<Array> {
        let h = self.fc1.forward(&ops::multiply(x, &self.scale)?)?;
        self.head.forward(&self.drop.forward(&h)?)
    }
}

/// The parameter names of a `Net`, in path order.
fn net_keys() -> Vec<&'static str> {
    vec!["fc1.bias", "fc1.weight", "head.layers.1.weight", "scale", "steps"]
}

#[test]
fn user_structs_compose_layers_into_parameter_trees() {
    let net = Net::new(0);
    assert_eq!(keys(&net.parameters()), net_keys());
    let mut seen = Vec::new();
    net.visit_params("model", &mut |path, p| seen.push((path.to_string(), p.shape().to_vec())));
    assert_eq!(
        seen,
        [
            ("model.scale".to_string(), vec![3]),
            ("model.steps".to_string(), vec![2]),
            ("model.fc1.weight".to_string(), vec![4, 3]),
            ("model.fc1.bias".to_string(), vec![4]),
            ("model.head.layers.1.weight".to_string(), vec![2, 4]),
        ]
    );
    // Param derefs to its array.
    let p = Param::from(ops::zeros(&[2, 2], Dtype::F32).unwrap());
    assert_eq!(p.shape(), &[2, 2]);
    assert!(!p.is_frozen());
}

#[test]
fn freeze_and_unfreeze_by_prefix() {
    let mut net = Net::new(1);
    net.freeze("fc1").unwrap();
    assert_eq!(keys(&net.trainable_parameters()), ["head.layers.1.weight", "scale", "steps"]);
    net.unfreeze("fc1.bias").unwrap();
    assert_eq!(keys(&net.trainable_parameters()), ["fc1.bias", "head.layers.1.weight", "scale", "steps"]);
    net.freeze("").unwrap();
    assert!(net.trainable_parameters().is_empty());
    assert_eq!(net.parameters().len(), 5);
    net.unfreeze("").unwrap();
    assert_eq!(net.trainable_parameters().len(), 5);
    assert!(!net.fc1.weight.is_frozen());
    let err = net.freeze("fc").unwrap_err();
    assert_eq!(err.to_string(), "[freeze] Module has no parameter under \"fc\".");
    assert_eq!(net.unfreeze("fc2").unwrap_err().to_string(), "[unfreeze] Module has no parameter under \"fc2\".");
    // A prefix matches whole path components: layers.1 is not layers.10.
    let mut seq = Sequential::new();
    for i in 0..11 {
        seq = seq.push(Linear::new(2, 2, false, Some(&key(i))).unwrap());
    }
    seq.freeze("layers.1").unwrap();
    let frozen: Vec<String> =
        seq.parameters().into_keys().filter(|k| !seq.trainable_parameters().contains_key(k)).collect();
    assert_eq!(frozen, ["layers.1.weight"]);
    // A module without parameters freezes nothing, without error.
    ReLU::new().freeze("").unwrap();
}

#[test]
fn update_is_strict_and_all_or_nothing() {
    let mut net = Net::new(2);
    let before = net.parameters();
    let mut new = Params::new();
    new.insert("fc1.bias".into(), ops::full(&[4], &Array::scalar(2.0f32), None).unwrap());
    new.insert("fc1.wieght".into(), ops::zeros(&[4, 3], Dtype::F32).unwrap());
    let err = net.update(&new).unwrap_err();
    assert_eq!(err.to_string(), "[update] Module does not have parameter named \"fc1.wieght\".");
    new.remove("fc1.wieght");
    new.insert("head.layers.1.weight".into(), ops::zeros(&[4, 2], Dtype::F32).unwrap());
    let err = net.update(&new).unwrap_err();
    assert_eq!(
        err.to_string(),
        "[update] Expected shape (2, 4) but received shape (4, 2) for parameter head.layers.1.weight."
    );
    // Nothing was changed by the failed updates.
    for (k, v) in &before {
        assert!(net.parameters()[k].same_node(v), "{k} changed");
    }
    // A partial update changes only what it names and keeps frozen flags.
    new.remove("head.layers.1.weight");
    net.freeze("fc1").unwrap();
    net.update(&new).unwrap();
    assert_eq!(get(net.fc1.bias.as_ref().unwrap()), vec![2.0; 4]);
    assert!(net.fc1.bias.as_ref().unwrap().is_frozen());
    assert!(net.fc1.weight.same_node(&before["fc1.weight"]));
    // A dtype change is allowed (as MLX allows it).
    let mut cast = Params::new();
    cast.insert("scale".into(), ops::ones(&[3], Dtype::F16).unwrap());
    net.update(&cast).unwrap();
    assert_eq!(net.scale.dtype(), Dtype::F16);
}

#[test]
fn training_mode_reaches_every_descendant() {
    let mut net = Net::new(3);
    assert!(net.training());
    net.train(false);
    assert!(!net.training(), "a struct without a flag reports its first child's");
    assert!(!net.drop.training() && !net.fc1.training() && !net.head.training());
    assert!(!net.head.layers[0].training());
    let x = Array::from_slice(&[1.0f32, -2.0, 0.5], &[1, 3]).unwrap();
    assert_eq!(get(&net.forward(&x).unwrap()), get(&net.forward(&x).unwrap()), "no dropout in eval mode");
    net.train(true);
    assert!(net.drop.training());

    let opts = TransformerOptions { dropout: 0.1, ..Default::default() };
    let mut enc = TransformerEncoder::new(2, 4, 2, &opts, false, Some(&key(4))).unwrap();
    enc.train(false);
    assert!(!enc.training());
    assert!(enc.layers.iter().all(|l| !l.dropout1.training() && !l.dropout2.training() && !l.attention.training()));
    let x = random::normal(&[1, 3, 4], Dtype::F32, None, None, Some(&key(5))).unwrap();
    assert_eq!(get(&enc.forward(&x, None).unwrap()), get(&enc.forward(&x, None).unwrap()));
}

#[test]
fn set_dtype_casts_floating_parameters_only() {
    let mut net = Net::new(6);
    net.set_dtype(Dtype::BF16).unwrap();
    let p = net.parameters();
    assert!(["fc1.bias", "fc1.weight", "head.layers.1.weight", "scale"].iter().all(|k| p[*k].dtype() == Dtype::BF16));
    assert_eq!(p["steps"].dtype(), Dtype::I32);
    let x = Array::from_slice(&[1.0f32, -2.0, 0.5], &[1, 3]).unwrap().astype(Dtype::BF16).unwrap();
    net.train(false);
    assert_eq!(net.forward(&x).unwrap().dtype(), Dtype::BF16);
}

#[test]
fn weights_round_trip_through_safetensors_and_npz() {
    for ext in ["safetensors", "npz"] {
        let path = scratch(&format!("net.{ext}"));
        let a = Net::new(7);
        a.save_weights(&path).unwrap();
        let mut b = Net::new(8);
        assert_ne!(get(&a.fc1.weight), get(&b.fc1.weight));
        b.load_weights(&path, true).unwrap();
        for (k, v) in a.parameters() {
            let loaded = &b.parameters()[&k];
            assert_eq!(loaded.dtype(), v.dtype(), "{ext}: {k}");
            assert_eq!(get(loaded), get(&v), "{ext}: {k}");
        }
        // A model of another shape: strict loading names what differs.
        let mut other = Sequential::new().push(Linear::new(3, 4, true, Some(&key(9))).unwrap());
        let err = other.load_weights(&path, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "[load_weights] Received 5 parameters not in model: \n\
             fc1.bias,\nfc1.weight,\nhead.layers.1.weight,\nscale,\nsteps."
        );
        // Non-strict loading takes the names it knows and skips the others.
        let mut part = Net::new(10);
        part.fc1 = Linear::new(3, 4, false, Some(&key(11))).unwrap();
        part.load_weights(&path, false).unwrap();
        assert_eq!(get(&part.fc1.weight), get(&a.fc1.weight));
        assert!(part.fc1.bias.is_none());
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn load_params_checks_names_and_shapes_when_strict() {
    let mut net = Net::new(12);
    let mut weights = net.parameters();
    weights.remove("scale");
    weights.remove("fc1.bias");
    let err = net.load_params(&weights, true).unwrap_err();
    assert_eq!(err.to_string(), "[load_weights] Missing 2 parameters: \nfc1.bias,\nscale.");
    let mut weights = net.parameters();
    weights.insert("fc1.weight".into(), ops::zeros(&[3, 4], Dtype::F32).unwrap());
    let err = net.load_params(&weights, true).unwrap_err();
    assert_eq!(
        err.to_string(),
        "[load_weights] Expected shape (4, 3) but received shape (3, 4) for parameter fc1.weight"
    );
    net.load_params(&Params::new(), false).unwrap();
    let err = net.save_weights(scratch("net.bin")).unwrap_err();
    assert!(err.to_string().starts_with("[save_weights] Unsupported file extension for"), "{err}");
    assert!(err.to_string().ends_with("net.bin. Use '.npz' or '.safetensors'."), "{err}");
    let npy = scratch("one.npy");
    ferrox::io::save(&npy, &ops::zeros(&[2], Dtype::F32).unwrap()).unwrap();
    assert!(net.load_weights(&npy, true).unwrap_err().to_string().contains("holds one unnamed array"));
    std::fs::remove_file(&npy).unwrap();
    assert!(net.load_weights(scratch("missing.safetensors"), true).is_err());
}

/// A tiny language model: embeddings, a causal encoder block, a final
/// normalization and a projection, in float64.
struct TinyLm {
    embed: Embedding,
    block: TransformerEncoderLayer,
    ln: LayerNorm,
    out: Linear,
}

impl Module for TinyLm {
    fn visit_entries(&self, f: &mut dyn FnMut(&str, Entry<'_>)) {
        f("embed", Entry::Module(&self.embed));
        f("block", Entry::Module(&self.block));
        f("ln", Entry::Module(&self.ln));
        f("out", Entry::Module(&self.out));
    }

    fn visit_entries_mut(&mut self, f: &mut dyn FnMut(&str, EntryMut<'_>)) {
        f("embed", EntryMut::Module(&mut self.embed));
        f("block", EntryMut::Module(&mut self.block));
        f("ln", EntryMut::Module(&mut self.ln));
        f("out", EntryMut::Module(&mut self.out));
    }
}

impl TinyLm {
    fn loss(&self, tokens: &Array, targets: &Array) -> ferrox::Result<Array> {
        let mask = MultiHeadAttention::create_additive_causal_mask(tokens.shape()[1], Dtype::F64)?;
        let h = self.block.forward(&self.embed.forward(tokens)?, Some(&mask))?;
        let logits = self.out.forward(&ferrox_nn::functions::gelu(&self.ln.forward(&h)?)?)?;
        cross_entropy(&logits, targets, None, -1, 0.1, Reduction::Mean)
    }
}

#[test]
fn gradients_of_a_small_model_match_finite_differences() {
    let subkeys = random::split(&key(13), 3).unwrap();
    let k = |i: i64| ops::index(&subkeys, &[ops::Index::Int(i)]).unwrap();
    let opts = TransformerOptions { mlp_dims: Some(6), ..Default::default() };
    let mut model = TinyLm {
        embed: Embedding::new(5, 4, Some(&k(0))).unwrap(),
        block: TransformerEncoderLayer::new(4, 2, &opts, Some(&k(1))).unwrap(),
        ln: LayerNorm::new(4).unwrap(),
        out: Linear::new(4, 5, true, Some(&k(2))).unwrap(),
    };
    // Non-trivial normalization parameters, in float64.
    let ln_w = random::normal(&[4], Dtype::F32, None, None, Some(&key(14))).unwrap();
    let mut p = Params::new();
    p.insert("ln.weight".into(), ln_w);
    model.update(&p).unwrap();
    model.set_dtype(Dtype::F64).unwrap();
    model.freeze("block.ln1").unwrap();
    let tokens = Array::from_slice(&[0i32, 3, 1, 4, 2, 2, 1, 0], &[2, 4]).unwrap();
    let targets = Array::from_slice(&[3i32, 1, 4, 2, 2, 1, 0, 3], &[2, 4]).unwrap();

    let before = model.parameters();
    let (loss, grads) = value_and_grad(&mut model, |m| m.loss(&tokens, &targets)).unwrap();
    assert!(get(&loss)[0] > 0.0);
    let mut want_names: Vec<&str> = keys(&before).into_iter().filter(|k| !k.starts_with("block.ln1.")).collect();
    want_names.sort();
    assert_eq!(keys(&grads), want_names, "gradients for the trainable parameters only");
    // The parameters are put back (not left as tracers).
    for (k, v) in &before {
        assert!(model.parameters()[k].same_node(v), "{k} not restored");
    }

    let eps = 1e-6;
    for (name, g) in &grads {
        let g = get(g);
        let base = get(&before[name]);
        // A few entries of each parameter, spread over it.
        let picks: Vec<usize> = (0..3).map(|i| (i * 7 + name.len()) % base.len()).collect();
        for &i in &picks {
            let at = |delta: f64| {
                let mut v = base.clone();
                v[i] += delta;
                let mut p = Params::new();
                p.insert(name.clone(), Array::from_vec(v, before[name].shape()).unwrap());
                let mut m = TinyLm {
                    embed: model.embed.clone(),
                    block: model.block.clone(),
                    ln: model.ln.clone(),
                    out: model.out.clone(),
                };
                m.update(&p).unwrap();
                get(&m.loss(&tokens, &targets).unwrap())[0]
            };
            let fd = (at(eps) - at(-eps)) / (2.0 * eps);
            assert!((fd - g[i]).abs() <= 1e-6 * (1.0 + fd.abs()), "d loss / d {name}[{i}]: grad {} vs fd {fd}", g[i]);
        }
    }

    // A failing loss leaves the parameters in place too.
    let err = value_and_grad(&mut model, |m| m.out.forward(&tokens)).unwrap_err();
    assert!(!err.to_string().is_empty());
    for (k, v) in &before {
        assert!(model.parameters()[k].same_node(v), "{k} not restored after an error");
    }
    // Without trainable parameters there is nothing to differentiate.
    model.freeze("").unwrap();
    let (loss2, none) = value_and_grad(&mut model, |m| m.loss(&tokens, &targets)).unwrap();
    assert!(none.is_empty());
    assert_eq!(get(&loss2), get(&loss));
}
