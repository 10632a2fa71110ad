//! Zero-copy host imports (`Array::from_foreign_host`): arrays over memory
//! another library owns, read without a copy, never written, and released
//! exactly once when the last array reading them is gone.

use ferrox::backend::{ScatterOp, Storage};
use ferrox::device::{default_stream, with_stream};
use ferrox::ops::{self, Index};
use ferrox::{get_active_memory, Array, Device, Dtype};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A stand-in for a producer's tensor: owns the memory, counts its releases.
struct Producer<T> {
    _data: Vec<T>,
    releases: Arc<AtomicUsize>,
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.releases.fetch_add(1, Ordering::SeqCst);
    }
}

/// Imports `data` (shape and strides as given, element `[0, ...]` at
/// `first`) with a counting owner that keeps `data` alive.
fn import<T: Send + 'static>(
    data: Vec<T>,
    first: usize,
    dtype: Dtype,
    shape: &[usize],
    strides: &[isize],
) -> (Array, *const T, Arc<AtomicUsize>) {
    let releases = Arc::new(AtomicUsize::new(0));
    let ptr = data.as_ptr();
    let owner = Producer { _data: data, releases: releases.clone() };
    // SAFETY: the owner keeps the vector's heap block (which a move does
    // not relocate) alive, and nothing writes to it.
    let a = unsafe { Array::from_foreign_host(ptr.add(first) as *const u8, dtype, shape, strides, owner) }.unwrap();
    (a, ptr, releases)
}

fn is_foreign(a: &Array) -> bool {
    match &*a.data().unwrap().storage {
        Storage::Cpu(host) => host.is_foreign(),
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

/// The address of the host buffer `a` reads.
fn host_address(a: &Array) -> usize {
    match &*a.data().unwrap().storage {
        Storage::Cpu(host) => host.bytes().as_ptr() as usize,
        #[allow(unreachable_patterns)]
        _ => unreachable!("a host import lives on the CPU"),
    }
}

/// Runs `f` with the CPU as the default device (the memory is host memory).
fn on_cpu<R>(f: impl FnOnce() -> R) -> R {
    with_stream(default_stream(Device::CPU), f)
}

#[test]
fn shares_memory_and_releases_the_owner_once_after_the_last_reader() {
    on_cpu(|| {
        let (a, ptr, releases) = import((0..12).map(|v| v as f32).collect(), 0, Dtype::F32, &[3, 4], &[4, 1]);
        assert!(is_foreign(&a));
        assert_eq!(host_address(&a), ptr as usize);
        assert_eq!(a.to_vec::<f32>().unwrap(), (0..12).map(|v| v as f32).collect::<Vec<_>>());

        // An evaluated view shares the buffer, and a pending result holds it
        // until it is computed (evaluation then releases the graph behind it).
        let view = a.transpose(None).unwrap();
        view.eval().unwrap();
        drop(a);
        assert_eq!(releases.load(Ordering::SeqCst), 0);
        let pending = ops::sum(&view, Some(&[1]), false).unwrap();
        drop(view);
        assert_eq!(releases.load(Ordering::SeqCst), 0);
        assert_eq!(pending.to_vec::<f32>().unwrap(), vec![12.0, 15.0, 18.0, 21.0]);
        assert_eq!(releases.load(Ordering::SeqCst), 1);
        drop(pending);
        assert_eq!(releases.load(Ordering::SeqCst), 1);
    });
}

#[test]
fn strided_and_negative_views_are_shared() {
    on_cpu(|| {
        // Every other column of a 3x4 matrix, and its rows reversed
        // (element [0, 0] is the last row's first element).
        let data: Vec<i32> = (0..12).collect();
        let (a, _, releases) = import(data.clone(), 0, Dtype::I32, &[3, 2], &[4, 2]);
        assert!(is_foreign(&a));
        assert_eq!(a.to_vec::<i32>().unwrap(), vec![0, 2, 4, 6, 8, 10]);
        let (r, _, r_releases) = import(data, 8, Dtype::I32, &[3, 4], &[-4, 1]);
        assert!(is_foreign(&r));
        assert_eq!(r.to_vec::<i32>().unwrap(), vec![8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3]);
        assert_eq!(r.data().unwrap().layout.offset, 8);
        // Broadcast (zero stride) and 0-d.
        let (b, _, _) = import(vec![7u8], 0, Dtype::U8, &[2, 3], &[0, 0]);
        assert!(is_foreign(&b));
        assert_eq!(b.to_vec::<u8>().unwrap(), vec![7; 6]);
        let (s, _, _) = import(vec![2.5f64], 0, Dtype::F64, &[], &[]);
        assert_eq!(s.item::<f64>().unwrap(), 2.5);
        // Ops read the shared memory.
        let m = a.t().unwrap().matmul(&a).unwrap();
        assert_eq!(m.to_vec::<i32>().unwrap(), vec![80, 104, 104, 140]);
        drop((a, r, m));
        assert_eq!((releases.load(Ordering::SeqCst), r_releases.load(Ordering::SeqCst)), (1, 1));
    });
}

#[test]
fn updates_make_new_buffers_and_leave_the_memory_alone() {
    on_cpu(|| {
        let (a, ptr, _releases) = import(vec![1.0f32, 2.0, 3.0], 0, Dtype::F32, &[3], &[1]);
        let five = Array::scalar(5.0f32);
        let b = ops::index_update(&a, &[Index::Int(0)], &five, ScatterOp::Assign).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap(), vec![5.0, 2.0, 3.0]);
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0]);
        // SAFETY: the owner (held by `a`) keeps the memory alive.
        assert_eq!(unsafe { std::slice::from_raw_parts(ptr, 3) }, [1.0, 2.0, 3.0]);
        assert!(!is_foreign(&b));
    });
}

#[test]
fn misaligned_or_invalid_memory_is_copied_and_released_at_once() {
    on_cpu(|| {
        // An f32 starting at byte 1 is misaligned.
        let bytes: Vec<u8> = [0u8].into_iter().chain(1.5f32.to_le_bytes()).chain(2.5f32.to_le_bytes()).collect();
        let (a, _, releases) = import(bytes, 1, Dtype::F32, &[2], &[1]);
        assert!(!is_foreign(&a));
        assert_eq!(releases.load(Ordering::SeqCst), 1);
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.5, 2.5]);
        // Strided and reversed, still misaligned: copied element by element.
        let floats = [1.0f32, 2.0, 3.0, 4.0, 5.0];
        let bytes: Vec<u8> = [0u8].into_iter().chain(floats.iter().flat_map(|f| f.to_le_bytes())).collect();
        let (r, _, releases) = import(bytes, 1 + 16, Dtype::F32, &[3], &[-2]);
        assert!(!is_foreign(&r));
        assert_eq!(releases.load(Ordering::SeqCst), 1);
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![5.0, 3.0, 1.0]);
        // A bool byte other than 0/1 (anywhere in the span) is copied and normalised.
        let (b, _, releases) = import(vec![0u8, 2, 1], 0, Dtype::Bool, &[3], &[1]);
        assert!(!is_foreign(&b));
        assert_eq!(releases.load(Ordering::SeqCst), 1);
        assert_eq!(b.to_vec::<bool>().unwrap(), vec![false, true, true]);
        let (c, _, _) = import(vec![0u8, 1, 1], 0, Dtype::Bool, &[3], &[1]);
        assert!(is_foreign(&c));
    });
}

#[test]
fn bad_arguments_fail_and_release_the_owner() {
    let releases = Arc::new(AtomicUsize::new(0));
    let data = vec![0f32; 4];
    let ptr = data.as_ptr() as *const u8;
    let owner = Producer { _data: data, releases: releases.clone() };
    // SAFETY: refused before any memory is read.
    let err = unsafe { Array::from_foreign_host(ptr, Dtype::F32, &[2, 2], &[1], owner) }.unwrap_err();
    assert!(err.to_string().contains("from_foreign_host"), "{err}");
    assert_eq!(releases.load(Ordering::SeqCst), 1);
    // Empty arrays need no memory at all.
    // SAFETY: no element is addressed.
    let e = unsafe { Array::from_foreign_host(std::ptr::null(), Dtype::I64, &[0, 3], &[3, 1], ()) }.unwrap();
    assert_eq!(e.shape(), &[0, 3]);
    assert!(on_cpu(|| e.to_vec::<i64>()).unwrap().is_empty());
}

#[test]
fn foreign_memory_is_not_counted_or_cached() {
    on_cpu(|| {
        const N: usize = 16 << 20; // 64 MiB of f32
        let before = get_active_memory();
        let (a, _, releases) = import(vec![1.0f32; N], 0, Dtype::F32, &[N], &[1]);
        assert!(is_foreign(&a));
        // Other tests run concurrently in this process: allow their buffers.
        assert!(get_active_memory() < before + N * 2);
        let cached = ferrox::get_cache_memory();
        drop(a);
        assert_eq!(releases.load(Ordering::SeqCst), 1);
        assert!(ferrox::get_cache_memory() < cached + N * 4);
    });
}
