//! A brief mutation fuzz of the file parsers on stable Rust, run by `cargo
//! test` (so by CI's `make test`). For each format it mutates the seed corpus
//! of the cargo-fuzz target (`crates/ferrox/fuzz/corpus/<format>/`) with
//! libFuzzer's mutations — bit flips, interesting bytes, random runs,
//! truncation, extension, chunk copies and deletions, 2/4/8-byte integers
//! overwritten with boundary values and values near the file's length, ASCII
//! numbers (the npy and safetensors headers) replaced, format tokens
//! inserted, crossover between inputs; half the time the npy and
//! safetensors header lengths are then repaired — and loads each mutant with
//! `ferrox::io::fuzz_load`, the cargo-fuzz targets' entry point (which
//! evaluates every array, so the lazy reads run). Without coverage
//! instrumentation, the feedback is the outcome: a mutant whose error
//! (digits and quoted text aside) is new, or that loads a new kind of array
//! (dtype, rank, empty or not), joins the inputs mutated next.
//!
//! Every mutant must give arrays or an error. A panic, an input that runs
//! longer than [`HANG_SECS`], or one that makes memory grow by more than
//! [`MAX_GROWTH`] fails the test with the format, the seed, the iteration
//! and a hex dump of the mutant, which is also written to a file to add to
//! the corpus (then `tests/io.rs` replays it on every run). A single
//! allocation above [`MAX_ALLOC`] aborts the process after printing the same.
//!
//! The run is deterministic (fixed seed, fixed number of mutants) so CI is
//! reproducible. Environment variables change it:
//!
//! - `FERROX_PARSER_FUZZ_SEED=<n>`: another seed (decimal or 0x hex).
//! - `FERROX_PARSER_FUZZ_ITERS=<n>`: mutants per format.
//! - `FERROX_PARSER_FUZZ_SECONDS=<s>`: run each format for `s` seconds
//!   instead (then the number of mutants depends on the machine).
//! - `FERROX_PARSER_FUZZ_FORMATS=npy,gguf`: only these formats.
//! - `FERROX_PARSER_FUZZ_VERBOSE=1`: print each new kind of outcome.
//!
//! ```sh
//! FERROX_PARSER_FUZZ_SECONDS=300 FERROX_PARSER_FUZZ_SEED=$RANDOM \
//!     cargo test -p ferrox --test parser_fuzz -- --nocapture
//! ```
//!
//! (Not `--release`: the test profile's overflow checks make an arithmetic
//! overflow on a lying size a panic the fuzz sees.)

use ferrox::io::{self, Format};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// The default seed.
const DEFAULT_SEED: u64 = 0x5EED_F0E4_0001;
/// An input that runs this long is a hang (a valid load takes milliseconds).
const HANG_SECS: u64 = 30;
/// Mutants are cut to this length (the seeds are a few hundred bytes).
const MAX_LEN: usize = 1 << 14;
/// Memory one input may add while it loads: the inputs are at most
/// [`MAX_LEN`] bytes, so even a deflated `.npz` entry (at most ~1000 times
/// its compressed size) stays far below.
const MAX_GROWTH: usize = 64 << 20;
/// A single allocation above this aborts the process (it could not be caught
/// after the fact: the system may not even grant it).
const MAX_ALLOC: usize = 1 << 30;
/// Inputs kept for mutation beyond the seeds, per format.
const MAX_POOL: usize = 512;
/// Kinds of outcome remembered for the feedback, per format.
const MAX_CLASSES: usize = 1 << 14;

/// The formats, with the mutants each runs by default: about 6 s each in the
/// test profile (ferrox at opt-level 1) on an idle two-core machine, 25 s in
/// all (40 s when another build shares the cores).
const FORMATS: [(&str, Format, u64); 4] = [
    ("npy", Format::Npy, 2_400_000),
    ("npz", Format::Npz, 1_450_000),
    ("safetensors", Format::Safetensors, 1_400_000),
    ("gguf", Format::Gguf, 600_000),
];

// ---------------------------------------------------------------------------
// Memory accounting: a global allocator that counts live bytes and their
// peak, and refuses (after saying which input asked) absurd single requests.

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[global_allocator]
static ALLOCATOR: Counting = Counting;

impl Counting {
    fn grew(size: usize) {
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOC {
            report_huge_allocation(layout.size());
            return std::ptr::null_mut();
        }
        let p = System.alloc(layout);
        if !p.is_null() {
            Counting::grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > MAX_ALLOC {
            report_huge_allocation(layout.size());
            return std::ptr::null_mut();
        }
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            Counting::grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > MAX_ALLOC {
            report_huge_allocation(new_size);
            return std::ptr::null_mut();
        }
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            Counting::grew(new_size);
        }
        p
    }
}

/// Writes `bytes` to stderr without allocating.
fn raw_stderr(bytes: &[u8]) {
    // SAFETY: writes from a valid buffer to file descriptor 2.
    unsafe {
        libc::write(2, bytes.as_ptr().cast(), bytes.len());
    }
}

/// Writes `n` in decimal to stderr without allocating.
fn raw_stderr_number(mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    raw_stderr(&buf[i..]);
}

/// Called by the allocator, so it must not allocate: says which input asked
/// for `size` bytes before the allocation fails (and the process aborts).
fn report_huge_allocation(size: usize) {
    raw_stderr(b"\nparser_fuzz: an allocation of ");
    raw_stderr_number(size as u64);
    raw_stderr(b" bytes (more than any input justifies) while loading ");
    let Ok(current) = CURRENT.try_lock() else {
        raw_stderr(b"an input (unknown: the record is busy)\n");
        return;
    };
    raw_stderr(current.format.as_bytes());
    raw_stderr(b" input, seed (FERROX_PARSER_FUZZ_SEED) ");
    raw_stderr_number(current.seed);
    raw_stderr(b", iteration ");
    raw_stderr_number(current.iteration);
    raw_stderr(b"; the input's ");
    raw_stderr_number(current.input.len() as u64);
    raw_stderr(b" bytes in hex:\n");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for chunk in current.input.chunks(32) {
        let mut line = [0u8; 65];
        for (i, &b) in chunk.iter().enumerate() {
            line[2 * i] = HEX[(b >> 4) as usize];
            line[2 * i + 1] = HEX[(b & 15) as usize];
        }
        line[2 * chunk.len()] = b'\n';
        raw_stderr(&line[..2 * chunk.len() + 1]);
    }
}

// ---------------------------------------------------------------------------
// The input being loaded, for the watchdog and the allocation report.

struct Current {
    format: &'static str,
    seed: u64,
    iteration: u64,
    started: Option<Instant>,
    input: Vec<u8>,
}

static CURRENT: Mutex<Current> =
    Mutex::new(Current { format: "", seed: 0, iteration: 0, started: None, input: Vec::new() });

fn current() -> std::sync::MutexGuard<'static, Current> {
    CURRENT.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------
// Randomness: splitmix64, seeded per format and iteration.

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True with probability `1 / n`.
    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    /// A length in `1..=max`, small ones more likely.
    fn len(&mut self, max: usize) -> usize {
        let max = max.max(1);
        let cap = if self.one_in(4) { max } else { max.min(16) };
        1 + self.below(cap)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

// ---------------------------------------------------------------------------
// Mutations (libFuzzer's MutationDispatcher, without coverage).

/// Tokens of each format, inserted like libFuzzer's `-dict` entries.
fn dictionary(format: Format) -> &'static [&'static [u8]] {
    match format {
        Format::Npy => &[
            b"\x93NUMPY",
            b"\x01\x00",
            b"\x02\x00",
            b"\x03\x00",
            b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
            b"'descr': ",
            b"'fortran_order': True",
            b"'shape': ",
            b"'<f8'",
            b"'>i2'",
            b"'>c8'",
            b"'|b1'",
            b"'<V2'",
            b"'=u8'",
            b"()",
            b"(0,)",
            b"(1, 0, 2)",
            b", ",
            b"True",
            b"False",
            b"\n",
        ],
        Format::Npz => &[
            b"PK\x03\x04",
            b"PK\x01\x02",
            b"PK\x05\x06",
            b"PK\x06\x06",
            b"PK\x06\x07",
            b"PK\x07\x08",
            b"\x01\x00",
            b"\x08\x00",
            b"\xff\xff\xff\xff",
            b".npy",
            b"\x93NUMPY\x01\x00",
            b"'shape': (",
        ],
        Format::Safetensors => &[
            b"{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
            b"\"__metadata__\":{\"k\":\"v\"}",
            b"\"dtype\":",
            b"\"shape\":",
            b"\"data_offsets\":",
            b"\"F16\"",
            b"\"BF16\"",
            b"\"F8_E4M3\"",
            b"\"F8_E5M2\"",
            b"\"I64\"",
            b"\"BOOL\"",
            b"\"C64\"",
            b"[]",
            b"[0,0]",
            b"{}",
            b",",
            b"null",
        ],
        Format::Gguf => &[
            b"GGUF",
            b"\x02\x00\x00\x00",
            b"\x03\x00\x00\x00",
            b"general.alignment",
            b"\x11\x00\x00\x00\x00\x00\x00\x00general.alignment\x04\x00\x00\x00\x40\x00\x00\x00",
            b"\x09\x00\x00\x00",
            b"\x08\x00\x00\x00",
            b"\x0c\x00\x00\x00",
            b"\x1e\x00\x00\x00",
            b"\x0a\x00\x00\x00",
            b"\x0e\x00\x00\x00",
            b"\x20\x00\x00\x00\x00\x00\x00\x00",
        ],
    }
}

/// A boundary value for a `width`-byte integer field of a `len`-byte file.
fn interesting_int(rng: &mut Rng, width: usize, len: usize) -> u64 {
    let len = len as u64;
    let max = if width == 8 { u64::MAX } else { (1u64 << (8 * width)) - 1 };
    let v = match rng.below(30) {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 0x7f,
        4 => 0x80,
        5 => 0xff,
        6 => 0x100,
        7 => 0x7fff,
        8 => 0x8000,
        9 => 0xffff,
        10 => 0x7fff_ffff,
        11 => 0x8000_0000,
        12 => u32::MAX as u64,
        13 => 1 << 32,
        14 => i64::MAX as u64,
        15 => 1 << 63,
        16 => u64::MAX,
        17 => 1 << (20 + rng.below(43)),
        18 => max,
        19 => max - 1,
        20 => max / 2,
        21 => max / 2 + 1,
        22 => len,
        23 => len.wrapping_sub(1),
        24 => len + 1,
        25 => len.wrapping_sub(8 + rng.below(64) as u64),
        26 => len * 2,
        27 => rng.below(len.max(1) as usize) as u64,
        28 => (rng.below(64) as u64).wrapping_neg(),
        _ => rng.next(),
    };
    v & max
}

/// Replaces one run of ASCII digits (a shape, an offset, a header length)
/// with a boundary value, as libFuzzer's ChangeASCIIInteger does.
fn change_ascii_integer(rng: &mut Rng, data: &mut Vec<u8>) -> bool {
    let mut runs = Vec::new();
    let mut i = 0;
    while i < data.len() {
        if data[i].is_ascii_digit() {
            let start = i;
            while i < data.len() && data[i].is_ascii_digit() {
                i += 1;
            }
            runs.push((start, i));
        } else {
            i += 1;
        }
    }
    if runs.is_empty() {
        return false;
    }
    let (start, end) = *rng.pick(&runs);
    let old: u128 = std::str::from_utf8(&data[start..end]).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let len = data.len() as u128;
    let new = match rng.below(16) {
        0 => "0".to_string(),
        1 => "1".to_string(),
        2 => "-1".to_string(),
        3 => u32::MAX.to_string(),
        4 => (u32::MAX as u64 + 1).to_string(),
        5 => i64::MAX.to_string(),
        6 => (i64::MAX as u64 + 1).to_string(),
        7 => u64::MAX.to_string(),
        8 => "18446744073709551616".to_string(),
        9 => "1e9".to_string(),
        10 => old.saturating_add(1).to_string(),
        11 => old.saturating_sub(1).to_string(),
        12 => old.saturating_mul(2).to_string(),
        13 => len.to_string(),
        14 => (1u128 << (8 + rng.below(56))).to_string(),
        _ => (rng.next() >> rng.below(64)).to_string(),
    };
    data.splice(start..end, new.into_bytes());
    true
}

/// Applies one mutation to `data`; false when it did not apply.
fn mutate_once(rng: &mut Rng, data: &mut Vec<u8>, pool: &[Vec<u8>], dict: &[&[u8]]) -> bool {
    let n = data.len();
    match rng.below(17) {
        // Flip a bit.
        0 if n > 0 => {
            let i = rng.below(n);
            data[i] ^= 1 << rng.below(8);
        }
        // A byte set to an interesting or random value.
        1 if n > 0 => {
            let i = rng.below(n);
            data[i] = *rng.pick(&[0, 1, 0x7f, 0x80, 0xff, 0xfe, b' ', b'0', b'9', b'\'', b'"']);
        }
        2 if n > 0 => {
            let i = rng.below(n);
            data[i] = rng.next() as u8;
        }
        // A run of random bytes, or of one byte, overwritten or inserted.
        3 | 4 => {
            let len = rng.len(64);
            let run = if rng.one_in(2) { rng.bytes(len) } else { vec![rng.next() as u8; len] };
            let at = rng.below(n + 1);
            if rng.one_in(2) && n > 0 {
                let end = (at + len).min(n);
                data.splice(at..end, run[..end - at].iter().copied());
            } else {
                data.splice(at..at, run);
            }
        }
        // Truncation.
        5 if n > 0 => data.truncate(rng.below(n)),
        // Extension with zeros or random bytes.
        6 => {
            let len = if rng.one_in(8) { rng.below(4096) + 1 } else { rng.len(64) };
            if rng.one_in(2) {
                data.resize(n + len, 0);
            } else {
                data.extend(rng.bytes(len));
            }
        }
        // A chunk duplicated (inserted elsewhere or overwriting), or deleted.
        7 | 8 if n > 0 => {
            let from = rng.below(n);
            let len = rng.len(n - from);
            let chunk = data[from..from + len].to_vec();
            let to = rng.below(n + 1);
            if rng.one_in(2) {
                data.splice(to..to, chunk);
            } else {
                let end = (to + len).min(n);
                data.splice(to..end, chunk[..end - to].iter().copied());
            }
        }
        9 if n > 0 => {
            let from = rng.below(n);
            let len = rng.len(n - from);
            data.drain(from..from + len);
        }
        // A 2, 4 or 8-byte integer (a length, a count, an offset, a type)
        // overwritten with a boundary value or nudged.
        10..=12 => {
            let width = *rng.pick(&[2usize, 4, 8]);
            if n < width {
                return false;
            }
            let mut at = rng.below(n - width + 1);
            if rng.one_in(2) {
                at -= at % width;
            }
            let field = &mut data[at..at + width];
            let mut bytes = [0u8; 8];
            bytes[..width].copy_from_slice(field);
            let old = u64::from_le_bytes(bytes);
            let value = if rng.one_in(3) {
                let delta = 1 + rng.below(16) as u64;
                if rng.one_in(2) {
                    old.wrapping_add(delta)
                } else {
                    old.wrapping_sub(delta)
                }
            } else {
                interesting_int(rng, width, n)
            };
            let bytes = value.to_le_bytes();
            field.copy_from_slice(&bytes[..width]);
            if rng.one_in(8) {
                field.reverse(); // big-endian
            }
        }
        // An ASCII number changed.
        13 => return change_ascii_integer(rng, data),
        // A token of the format inserted or overwritten.
        14 => {
            let token = *rng.pick(dict);
            let at = rng.below(n + 1);
            if rng.one_in(2) {
                data.splice(at..at, token.iter().copied());
            } else {
                let end = (at + token.len()).min(n);
                data.splice(at..end, token.iter().copied());
            }
        }
        // Crossover with another input: a splice, or a chunk of it inserted.
        15 | 16 => {
            let other = rng.pick(pool);
            if other.is_empty() {
                return false;
            }
            let from = rng.below(other.len());
            if rng.one_in(2) {
                let at = rng.below(n + 1);
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            } else {
                let len = rng.len(other.len() - from);
                let at = rng.below(n + 1);
                data.splice(at..at, other[from..from + len].iter().copied());
            }
        }
        _ => return false,
    }
    true
}

/// Half the time, repairs the length fields that a mutation of the text
/// header put out of step, so that mutants get past them to the checks of
/// shapes, types and offsets (what a coverage-guided fuzzer learns to do).
fn fix_lengths(rng: &mut Rng, format: Format, data: &mut Vec<u8>) {
    if rng.one_in(2) {
        return;
    }
    match format {
        // The header length (u16 in version 1, u32 after) ends the header
        // at its first newline.
        Format::Npy if data.len() > 12 && data.starts_with(b"\x93NUMPY") => {
            let (at, width) = if data[6] == 1 { (8, 2) } else { (8, 4) };
            let Some(newline) = data[at + width..].iter().position(|&b| b == b'\n') else { return };
            let len = (newline + 1) as u32;
            if width == 2 && len <= u16::MAX as u32 {
                data[at..at + 2].copy_from_slice(&(len as u16).to_le_bytes());
            } else if width == 4 {
                data[at..at + 4].copy_from_slice(&len.to_le_bytes());
            }
        }
        // The header length ends the header at the end of its JSON, and the
        // data is cut or padded to the largest end offset it names.
        Format::Safetensors if data.len() > 8 => {
            let mut values = serde_json::Deserializer::from_slice(&data[8..]).into_iter::<serde_json::Value>();
            let Some(Ok(header)) = values.next() else { return };
            let header_len = values.byte_offset();
            let end = header
                .as_object()
                .into_iter()
                .flat_map(|entries| entries.values())
                .filter_map(|info| info.get("data_offsets")?.get(1)?.as_u64())
                .max()
                .unwrap_or(0);
            data[..8].copy_from_slice(&(header_len as u64).to_le_bytes());
            if let Some(total) = usize::try_from(end).ok().and_then(|e| e.checked_add(8 + header_len)) {
                if total <= MAX_LEN {
                    data.resize(total, 0);
                }
            }
        }
        _ => {}
    }
}

/// A mutant of `base`: one to five stacked mutations, as libFuzzer does.
fn mutate(rng: &mut Rng, format: Format, base: &[u8], pool: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
    let mut data = base.to_vec();
    let wanted = 1 + rng.below(5);
    let mut done = 0;
    for _ in 0..wanted * 4 {
        if done == wanted {
            break;
        }
        if mutate_once(rng, &mut data, pool, dict) {
            done += 1;
        }
    }
    fix_lengths(rng, format, &mut data);
    data.truncate(MAX_LEN);
    data
}

// ---------------------------------------------------------------------------
// The run.

struct Config {
    seed: u64,
    /// Mutants per format, when not each format's default.
    iters: Option<u64>,
    seconds: Option<f64>,
    /// Indices in [`FORMATS`] (which also pick each format's random streams,
    /// so a format run alone repeats its mutants of a full run).
    formats: Vec<usize>,
    verbose: bool,
}

impl Config {
    fn from_env() -> Config {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let seed = var("FERROX_PARSER_FUZZ_SEED").map_or(DEFAULT_SEED, |v| {
            let v = v.trim();
            let parsed = match v.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => v.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("FERROX_PARSER_FUZZ_SEED={v:?} is not a number"))
        });
        let iters = var("FERROX_PARSER_FUZZ_ITERS")
            .map(|v| v.trim().parse().unwrap_or_else(|_| panic!("FERROX_PARSER_FUZZ_ITERS={v:?} is not a number")));
        let seconds = var("FERROX_PARSER_FUZZ_SECONDS")
            .map(|v| v.trim().parse().unwrap_or_else(|_| panic!("FERROX_PARSER_FUZZ_SECONDS={v:?} is not a number")));
        let formats = match var("FERROX_PARSER_FUZZ_FORMATS") {
            None => (0..FORMATS.len()).collect(),
            Some(list) => list
                .split(',')
                .map(|name| {
                    FORMATS
                        .iter()
                        .position(|(n, _, _)| *n == name.trim())
                        .unwrap_or_else(|| panic!("FERROX_PARSER_FUZZ_FORMATS: unknown format {name:?}"))
                })
                .collect(),
        };
        let verbose = var("FERROX_PARSER_FUZZ_VERBOSE").is_some_and(|v| v != "0");
        Config { seed, iters, seconds, formats, verbose }
    }
}

/// The seed corpus of one target, in file-name order (for determinism).
fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(name);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus {}: {e}", dir.display()))
        .map(|e| e.expect("a corpus entry").path())
        .collect();
    paths.sort();
    let seeds: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).expect("a readable seed")).collect();
    assert!(!seeds.is_empty(), "the corpus {} is empty", dir.display());
    seeds
}

/// An error's kind for the feedback: its message without digits or quoted
/// text (names, headers, serde's `values`), which mutations change without
/// reaching new code.
fn error_class(message: &str) -> String {
    let mut text = message.to_string();
    // From the first quote to the last of each kind: quoted names may hold
    // quotes themselves.
    for quote in ['"', '`'] {
        if let (Some(first), Some(last)) = (text.find(quote), text.rfind(quote)) {
            if last > first {
                text.replace_range(first..=last, "<>");
            }
        }
    }
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('#') {
                out.push('#');
            }
        } else {
            out.push(c);
        }
    }
    // serde's list of the names it expected says nothing about the input.
    if let Some(cut) = out.find("expected one of") {
        out.truncate(cut);
    }
    out.chars().take(160).collect()
}

/// What a loading input holds, for the feedback: the kinds of array (dtype,
/// rank, empty or not) and of GGUF metadata among its contents.
fn loaded_class(format: Format, input: &[u8]) -> String {
    let describe =
        |a: &ferrox::Array| format!("{}/{}{}", a.dtype(), a.ndim(), if a.size() == 0 { "/empty" } else { "" });
    let mut kinds = std::collections::BTreeSet::new();
    match io::load_bytes("fuzz input", input.to_vec(), format) {
        Ok(io::Loaded::Array(a)) => {
            kinds.insert(describe(&a));
        }
        Ok(io::Loaded::Arrays(arrays, metadata)) => {
            kinds.extend(arrays.iter().map(|(_, a)| describe(a)));
            if let io::Metadata::Gguf(values) = metadata {
                kinds.extend(values.iter().map(|(_, v)| match v {
                    io::GgufValue::Array(a) => format!("metadata {}", describe(a)),
                    io::GgufValue::String(_) => "metadata string".into(),
                    io::GgufValue::Strings(list) => format!("metadata {} strings", list.len().min(2)),
                }));
            }
        }
        Err(e) => return format!("loads once, then fails: {e}"),
    }
    format!("loads {}", kinds.into_iter().collect::<Vec<_>>().join(", "))
}

/// `bytes` as `xxd` shows them, up to `limit` bytes.
fn hex_dump(bytes: &[u8], limit: usize) -> String {
    let mut out = String::new();
    for (row, chunk) in bytes[..bytes.len().min(limit)].chunks(16).enumerate() {
        let _ = write!(out, "  {:08x}:", row * 16);
        for (i, b) in chunk.iter().enumerate() {
            if i % 2 == 0 {
                out.push(' ');
            }
            let _ = write!(out, "{b:02x}");
        }
        for i in chunk.len()..16 {
            out.push_str(if i % 2 == 0 { "   " } else { "  " });
        }
        out.push_str("  ");
        out.extend(chunk.iter().map(|&b| if b.is_ascii_graphic() || b == b' ' { b as char } else { '.' }));
        out.push('\n');
    }
    if bytes.len() > limit {
        let _ = writeln!(out, "  ... ({} bytes in all)", bytes.len());
    }
    out
}

/// The failure report for `input`, which is also written to a file.
fn failure(format: &str, seed: u64, iteration: u64, problem: &str, input: &[u8]) -> String {
    let path = std::env::temp_dir().join(format!("ferrox-parser-fuzz-{format}-{seed:#x}-{iteration}"));
    let saved = match std::fs::write(&path, input) {
        Ok(()) => format!("saved to {}", path.display()),
        Err(e) => format!("could not be saved to {}: {e}", path.display()),
    };
    format!(
        "parser fuzz: the {format} parser {problem}\n\
         format {format}, seed {seed:#x} (FERROX_PARSER_FUZZ_SEED), iteration {iteration}; \
         the {} byte mutant is {saved}.\n\
         Fix the parser, then add the mutant to crates/ferrox/fuzz/corpus/{format}/ (tests/io.rs replays it).\n\
         Rerun: FERROX_PARSER_FUZZ_SEED={seed:#x} FERROX_PARSER_FUZZ_FORMATS={format} cargo test -p ferrox --test parser_fuzz\n\
         {}",
        input.len(),
        hex_dump(input, 512)
    )
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(a non-string payload)".into())
}

/// What one format's run did.
struct Stats {
    mutants: u64,
    loaded: u64,
    outcomes: usize,
    pool: usize,
    elapsed: Duration,
}

/// Mutates and loads `name`'s corpus; the failure report on a panic or an
/// unjustified allocation.
fn fuzz_format(index: usize, config: &Config) -> Result<Stats, String> {
    let (name, format, default_iters) = FORMATS[index];
    let iters = config.iters.unwrap_or(default_iters);
    let seeds = corpus(name);
    let n_seeds = seeds.len();
    let mut pool = seeds;
    let dict = dictionary(format);
    let mut classes: HashSet<String> = HashSet::new();
    let start = Instant::now();
    let deadline = config.seconds.map(|s| start + Duration::from_secs_f64(s));
    let mut loaded = 0;
    let mut iteration = 0u64;
    loop {
        match deadline {
            Some(d) if Instant::now() >= d => break,
            None if iteration >= iters => break,
            _ => {}
        }
        // Each mutant has its own stream, so a change in one mutation does
        // not reshuffle every later one.
        let mut rng = Rng::new(config.seed ^ ((index as u64) << 56) ^ iteration.wrapping_mul(0xA076_1D64_78BD_642F));
        // Half the mutants start from a seed (the whole files), the others
        // from any input kept.
        let base = if rng.one_in(2) { rng.below(n_seeds) } else { rng.below(pool.len()) };
        let input = mutate(&mut rng, format, &pool[base], &pool, dict);
        {
            let mut cur = current();
            cur.format = name;
            cur.seed = config.seed;
            cur.iteration = iteration;
            cur.input.clear();
            cur.input.extend_from_slice(&input);
            cur.started = Some(Instant::now());
        }
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let outcome = catch_unwind(AssertUnwindSafe(|| io::fuzz_load(format, &input)));
        let grown = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        current().started = None;
        let class = match outcome {
            Err(payload) => {
                let problem = format!("panicked: {}", panic_message(&*payload));
                return Err(failure(name, config.seed, iteration, &problem, &input));
            }
            Ok(Ok(())) => {
                loaded += 1;
                loaded_class(format, &input)
            }
            Ok(Err(e)) => error_class(&e.to_string()),
        };
        if grown > MAX_GROWTH {
            let problem = format!(
                "allocated {} MiB for a {}-byte input (more than the {} MiB allowed)",
                grown >> 20,
                input.len(),
                MAX_GROWTH >> 20
            );
            return Err(failure(name, config.seed, iteration, &problem, &input));
        }
        // Feedback: keep inputs that fail in a new way or load new kinds of
        // arrays.
        if classes.len() < MAX_CLASSES && !classes.contains(&class) {
            if config.verbose {
                eprintln!("parser fuzz: {name}: iteration {iteration}: {class}");
            }
            classes.insert(class);
            if pool.len() < n_seeds + MAX_POOL {
                pool.push(input);
            } else {
                let slot = n_seeds + rng.below(MAX_POOL);
                pool[slot] = input;
            }
        }
        iteration += 1;
    }
    Ok(Stats {
        mutants: iteration,
        loaded,
        outcomes: classes.len(),
        pool: pool.len() - n_seeds,
        elapsed: start.elapsed(),
    })
}

#[test]
fn parsers_survive_mutated_corpora() {
    let config = Config::from_env();
    let seed = config.seed;
    eprintln!(
        "parser fuzz: seed {seed:#x}, {}",
        match (config.seconds, config.iters) {
            (Some(s), _) => format!("{s} s per format"),
            (None, Some(n)) => format!("{n} mutants per format"),
            (None, None) => "the default number of mutants per format".into(),
        }
    );
    let expected = config.formats.len();
    let mut reported = 0;
    let (tx, rx) = mpsc::channel();
    // The formats run on a worker thread; this one watches for a hang.
    std::thread::Builder::new()
        .name("parser-fuzz".into())
        .spawn(move || {
            for &index in &config.formats {
                let result = fuzz_format(index, &config);
                let stop = result.is_err();
                let _ = tx.send(result.map(|stats| (FORMATS[index].0, stats)));
                if stop {
                    return;
                }
            }
        })
        .expect("a worker thread");
    loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(Ok((name, s))) => {
                reported += 1;
                eprintln!(
                    "parser fuzz: {name}: {} mutants in {:.1} s ({} loaded, {} kinds of outcome, {} inputs kept)",
                    s.mutants,
                    s.elapsed.as_secs_f64(),
                    s.loaded,
                    s.outcomes,
                    s.pool
                );
            }
            Ok(Err(report)) => panic!("{report}"),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                assert_eq!(reported, expected, "the fuzz worker stopped early (a panic outside a load?)");
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let cur = current();
                if cur.started.is_some_and(|t| t.elapsed() > Duration::from_secs(HANG_SECS)) {
                    let (format, iteration, input) = (cur.format, cur.iteration, cur.input.clone());
                    drop(cur);
                    let problem = format!("ran for more than {HANG_SECS} s on one input (a hang)");
                    panic!("{}", failure(format, seed, iteration, &problem, &input));
                }
            }
        }
    }
}
