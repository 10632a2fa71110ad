//! Recorded launch sequences: what a backend keeps to replay a compiled
//! function's work cheaply. `compile` hands [`Backend::replay`] a
//! [`ReplaySlot`] with a function that runs the compiled graph on given
//! inputs; the CPU just runs it, CUDA captures the kernels it launches into
//! a CUDA graph once and replays that graph on later calls.

use crate::array::ArrayData;
use crate::error::Result;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs a compiled graph on its inputs (every kernel on one stream, in
/// the same order on every call with inputs of the same shapes).
pub type GraphRun<'a> = dyn Fn(&[ArrayData]) -> Result<Vec<ArrayData>> + 'a;

/// One compiled graph's replay state, kept across calls: the inputs after
/// the first `varying` are the same arrays on every call (constants), and
/// a backend may read them in place.
#[derive(Debug)]
pub struct ReplaySlot {
    varying: usize,
    launches: AtomicUsize,
    /// The CUDA backend's captured graph.
    #[cfg(feature = "cuda")]
    pub(crate) cuda: std::sync::Mutex<super::cuda::CapturedGraph>,
}

/// What a slot has recorded (for tests and `cache_info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayStats {
    /// Whether a captured graph is held.
    pub captured: bool,
    /// Why capture was refused, if it was (the graph then runs op by op).
    pub refused: Option<String>,
    /// Calls that replayed the captured graph.
    pub launches: usize,
}

impl ReplaySlot {
    /// A slot for a graph whose first `varying` inputs change between calls.
    pub fn new(varying: usize) -> ReplaySlot {
        ReplaySlot {
            varying,
            launches: AtomicUsize::new(0),
            #[cfg(feature = "cuda")]
            cuda: Default::default(),
        }
    }

    /// How many inputs change between calls (the rest are constants).
    pub fn varying(&self) -> usize {
        self.varying
    }

    /// Counts one replay of a recorded graph.
    pub(crate) fn count_launch(&self) {
        self.launches.fetch_add(1, Ordering::Relaxed);
    }

    /// What the slot holds.
    pub fn stats(&self) -> ReplayStats {
        let launches = self.launches.load(Ordering::Relaxed);
        #[cfg(feature = "cuda")]
        {
            let g = self.cuda.lock().unwrap_or_else(|e| e.into_inner());
            ReplayStats { captured: g.is_captured(), refused: g.refusal().map(str::to_string), launches }
        }
        #[cfg(not(feature = "cuda"))]
        ReplayStats { captured: false, refused: None, launches }
    }
}
