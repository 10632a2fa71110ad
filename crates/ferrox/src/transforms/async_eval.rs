//! Evaluation that returns before the work is done (MLX's `async_eval`).
//!
//! [`async_eval`] hands the pending recipes behind its arrays to one worker
//! thread (a CPU stream thread, as in MLX) and returns at once; the caller
//! goes on building the next graph while the worker computes. Jobs run in the
//! order they were queued, so a job may build on arrays an earlier job is
//! still computing: those recipes are marked queued and left out of later
//! jobs. Anything that needs values waits for the queued work first:
//! [`eval`] (and so every read of an array's data) and
//! [`crate::synchronize`].
//!
//! A job that fails stops there and leaves its remaining arrays pending. As in
//! MLX, the next [`eval`] or [`crate::synchronize`] reports the failure (once);
//! a later [`eval`] of the arrays left pending computes them again on the
//! caller's thread and reports its own error there.

use super::eval::{pending_recipes, run, run_in_order};
use crate::array::{Array, Recipe};
use crate::device::{current_stream, with_stream, DeviceType, Stream};
use crate::error::{Error, Result};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// Recipes to run in order, and the stream that was current when they were
/// queued (for anything a primitive builds while it runs).
struct Job {
    recipes: Vec<Arc<Recipe>>,
    stream: Stream,
}

/// Jobs queued and not yet finished, and the signal that the count changed.
static OUTSTANDING: Mutex<usize> = Mutex::new(0);
static FINISHED: Condvar = Condvar::new();

/// The first failure of a job since the last report (see [`take_async_failure`]).
static FAILURE: Mutex<Option<Error>> = Mutex::new(None);

/// The worker's queue; `None` when the thread could not be started.
static WORKER: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();

thread_local! {
    /// Set on the worker thread: its own evaluations must not wait for it.
    static ON_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Starts evaluating the pending arrays among `arrays` (and what they need)
/// without waiting for the result; reading an array's data, [`eval`] and
/// [`crate::synchronize`] wait for it.
///
/// Work that runs only on GPU streams is enqueued on the caller's thread when
/// nothing is queued (enqueueing does not wait for the GPU). Inside a
/// transform (a gradient or vmap trace, or compile recording a function) it
/// is an error, as in MLX.
pub fn async_eval<'a>(arrays: impl IntoIterator<Item = &'a Array>) -> Result<()> {
    let arrays: Vec<&Array> = arrays.into_iter().collect();
    if crate::transforms::compile::is_recording() || crate::transforms::autodiff::is_tracing() {
        return Err(Error::invalid("async_eval", "Not allowed inside a graph transformation."));
    }
    let recipes = pending_recipes(arrays.iter().copied(), |a| a.pending_recipe().is_some_and(|r| r.is_queued()));
    if recipes.is_empty() {
        return Ok(());
    }
    let all_gpu = recipes.iter().all(|r| r.stream.device.kind == DeviceType::Gpu);
    let Some(sender) = worker().filter(|_| !(all_gpu && idle())) else {
        // Nothing is queued, so `recipes` is everything pending: run it here.
        return run_in_order(recipes);
    };
    for r in &recipes {
        r.set_queued(true);
    }
    *lock_outstanding() += 1;
    let job = Job { recipes, stream: current_stream() };
    if let Err(returned) = sender.lock().unwrap_or_else(|e| e.into_inner()).send(job) {
        // The worker is gone (it never exits, so this is defensive): run here.
        for r in &returned.0.recipes {
            r.set_queued(false);
        }
        finish_job();
        wait_for_async_work();
        return run_in_order(returned.0.recipes);
    }
    Ok(())
}

/// Blocks until every queued job has finished (returns at once on the worker
/// thread itself, whose nested evaluations are part of its current job).
pub fn wait_for_async_work() {
    if ON_WORKER.with(|w| w.get()) {
        return;
    }
    let mut n = lock_outstanding();
    while *n > 0 {
        n = FINISHED.wait(n).unwrap_or_else(|e| e.into_inner());
    }
}

/// Reports, once, the first failure of an `async_eval` job since the last
/// report: [`eval`] and [`crate::synchronize`] call this after waiting.
pub(crate) fn take_async_failure() -> Result<()> {
    match FAILURE.lock().unwrap_or_else(|e| e.into_inner()).take() {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// Keeps `error` for the next report unless an earlier failure is waiting.
fn record_failure(error: Error) {
    FAILURE.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(error);
}

/// Whether no job is queued or running.
fn idle() -> bool {
    *lock_outstanding() == 0
}

fn lock_outstanding() -> std::sync::MutexGuard<'static, usize> {
    OUTSTANDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Marks one job finished and wakes the waiters.
fn finish_job() {
    let mut n = lock_outstanding();
    *n -= 1;
    FINISHED.notify_all();
}

/// The worker's queue, starting the thread on first use.
fn worker() -> Option<&'static Mutex<Sender<Job>>> {
    WORKER
        .get_or_init(|| {
            let (sender, receiver) = channel::<Job>();
            let spawned = std::thread::Builder::new().name("ferrox-async-eval".into()).spawn(move || {
                ON_WORKER.with(|w| w.set(true));
                for job in receiver {
                    run_job(job);
                }
            });
            spawned.ok().map(|_| Mutex::new(sender))
        })
        .as_ref()
}

/// Runs a job's recipes in order, each dropped once it has run (so
/// intermediates are freed as in [`eval`]). Stops at the first failure (an
/// error, a panic, or an input an earlier failed job left uncomputed) and
/// unmarks what it did not run, leaving it pending for a later [`eval`].
fn run_job(job: Job) {
    /// Counts the job finished however it ends.
    struct Finish;
    impl Drop for Finish {
        fn drop(&mut self) {
            finish_job();
        }
    }
    let _finish = Finish;
    let mut recipes = job.recipes.into_iter();
    with_stream(job.stream, || {
        while let Some(recipe) = recipes.next() {
            // An input left uncomputed means an earlier job failed and
            // recorded why; this job stops without a failure of its own.
            let inputs_ready = recipe.inputs.iter().all(|a| a.is_evaluated());
            let ran = inputs_ready
                && match catch_unwind(AssertUnwindSafe(|| run(&recipe))) {
                    Ok(Ok(())) => true,
                    Ok(Err(error)) => {
                        record_failure(error);
                        false
                    }
                    Err(panic) => {
                        record_failure(Error::Runtime {
                            op: "async_eval",
                            msg: crate::error::panic_message(panic.as_ref()),
                        });
                        false
                    }
                };
            if !ran {
                recipe.set_queued(false);
                for rest in recipes.by_ref() {
                    rest.set_queued(false);
                }
            }
        }
    });
}

impl Recipe {
    /// Whether an [`async_eval`] job will compute this recipe.
    pub(crate) fn is_queued(&self) -> bool {
        self.queued.load(Ordering::Acquire)
    }

    fn set_queued(&self, queued: bool) {
        self.queued.store(queued, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::ArrayData;
    use crate::backend::Backend;
    use crate::error::Error;
    use crate::primitives::{one_output, Batched, OutputSpec, Primitive};
    use std::sync::mpsc::{Receiver, RecvTimeoutError};
    use std::time::Duration;

    /// Passes its input through once `go` delivers (or fails, if `fail`);
    /// records whether it ran on the worker thread and whether it had to
    /// give up waiting.
    #[derive(Debug)]
    struct Gate {
        go: Mutex<Receiver<()>>,
        fail: bool,
        report: Mutex<Vec<(bool, bool)>>,
    }
    crate::primitives::opaque_primitive!(Gate);

    impl Primitive for Gate {
        fn name(&self) -> &'static str {
            "Gate"
        }
        fn output_specs(&self, inputs: &[Array]) -> Result<Vec<OutputSpec>> {
            one_output(inputs[0].shape().to_vec(), inputs[0].dtype())
        }
        fn eval(&self, _: &dyn Backend, inputs: &[ArrayData], _: &[OutputSpec]) -> Result<Vec<ArrayData>> {
            let waited = self.go.lock().unwrap().recv_timeout(Duration::from_secs(30));
            let on_worker = ON_WORKER.with(|w| w.get());
            self.report.lock().unwrap().push((on_worker, waited == Err(RecvTimeoutError::Timeout)));
            if self.fail {
                return Err(Error::invalid("Gate", "failed as asked"));
            }
            Ok(vec![inputs[0].clone()])
        }
        fn vjp(&self, _: &[Array], _: &[Array], _: &[Array], _: &[usize]) -> Result<Vec<Array>> {
            Err(Error::invalid("Gate", "has no derivative"))
        }
        fn jvp(&self, _: &[Array], _: &[Array], _: &[Array]) -> Result<Vec<Array>> {
            Err(Error::invalid("Gate", "has no derivative"))
        }
        fn vmap(&self, _: &[Array], _: &[Option<usize>]) -> Result<Batched> {
            Err(Error::invalid("Gate", "is not batched"))
        }
    }

    fn gated(x: &Array, fail: bool) -> (Array, Arc<Gate>, Sender<()>) {
        let (go, wait) = channel();
        let gate = Arc::new(Gate { go: Mutex::new(wait), fail, report: Mutex::new(Vec::new()) });
        let spec = OutputSpec { shape: x.shape().to_vec(), dtype: x.dtype() };
        let cpu = crate::device::default_stream(crate::device::Device::CPU);
        let y = Array::siblings_on_stream(vec![spec], gate.clone(), vec![x.clone()], cpu).unwrap().pop().unwrap();
        (y, gate, go)
    }

    /// The tests share the one worker: run them one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn returns_before_the_work_is_done_and_eval_waits_for_it() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let x = Array::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        let (y, gate, go) = gated(&x, false);
        // A second job builds on the first one's still-pending output.
        let z = crate::ops::multiply(&y, &Array::scalar(2.0f32)).unwrap();
        async_eval([&y]).unwrap();
        async_eval([&z]).unwrap();
        // Had async_eval waited, the gate would have timed out by now.
        go.send(()).unwrap();
        assert_eq!(z.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
        assert!(y.is_evaluated());
        assert_eq!(*gate.report.lock().unwrap(), vec![(true, false)], "ran once, on the worker, released by the test");
    }

    #[test]
    fn a_failed_job_is_reported_once_and_leaves_its_arrays_pending() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let x = Array::from_vec(vec![1.0f32], &[1]).unwrap();
        let (y, gate, go) = gated(&x, true);
        let z = crate::ops::add(&y, &y).unwrap();
        async_eval([&y]).unwrap();
        async_eval([&z]).unwrap();
        go.send(()).unwrap();
        go.send(()).unwrap();
        let err = crate::synchronize(None).unwrap_err().to_string();
        assert!(err.contains("failed as asked"), "synchronize reports the failure: {err}");
        crate::synchronize(None).expect("the failure is reported once");
        assert!(!y.is_evaluated() && !z.is_evaluated());
        let err = z.eval().unwrap_err().to_string();
        assert!(err.contains("failed as asked"), "{err}");
        let report = gate.report.lock().unwrap();
        assert_eq!(*report, vec![(true, false), (false, false)], "tried on the worker, then again by eval");
    }

    #[test]
    fn nothing_pending_is_nothing_to_do() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let x = Array::from_vec(vec![1.0f32], &[1]).unwrap();
        async_eval([&x]).unwrap();
        assert!(idle());
    }
}
