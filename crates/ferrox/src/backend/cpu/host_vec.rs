//! [`HostVec`]: the elements of one host buffer, either a `Vec` ferrox owns
//! or a region of memory another library owns (a zero-copy DLPack import).
//! Both read as a slice; ferrox never writes to, frees or recycles foreign
//! memory, and anything that needs an owned vector copies it first.

use std::fmt;
use std::ops::Deref;
use std::ptr::NonNull;

/// Elements on the host: owned, or borrowed from another library.
pub struct HostVec<T> {
    repr: Repr<T>,
}

enum Repr<T> {
    Owned(Vec<T>),
    /// `len` elements at `ptr`, kept alive (and released when dropped) by `owner`.
    Foreign {
        ptr: NonNull<T>,
        len: usize,
        _owner: Box<dyn Send>,
    },
}

// SAFETY: a foreign region is only ever read through `&[T]` (so sharing it
// needs `T: Sync`, and sending it `T: Send`), and its owner is never
// accessed, only dropped, which `Box<dyn Send>` allows on any thread.
unsafe impl<T: Send> Send for HostVec<T> {}
// SAFETY: as above; `&HostVec<T>` gives out nothing but `&[T]`.
unsafe impl<T: Sync> Sync for HostVec<T> {}

impl<T> HostVec<T> {
    /// Views `len` elements at `ptr` that `owner` keeps alive; dropping the
    /// `HostVec` drops `owner` (exactly once), which may release the memory.
    ///
    /// # Safety
    /// `ptr` must be aligned for `T` and point to `len` initialized, valid
    /// values of `T` that stay readable, and are not written, until `owner`
    /// is dropped.
    pub unsafe fn foreign(ptr: NonNull<T>, len: usize, owner: impl Send + 'static) -> HostVec<T> {
        HostVec { repr: Repr::Foreign { ptr, len, _owner: Box::new(owner) } }
    }

    /// Whether the elements live in memory another library owns.
    pub fn is_foreign(&self) -> bool {
        matches!(self.repr, Repr::Foreign { .. })
    }

    /// The elements as a slice.
    pub fn as_slice(&self) -> &[T] {
        self
    }

    /// The elements, writable, when ferrox owns them (`None` for foreign
    /// memory, which is never written).
    pub fn owned_mut(&mut self) -> Option<&mut [T]> {
        match &mut self.repr {
            Repr::Owned(v) => Some(v),
            Repr::Foreign { .. } => None,
        }
    }

    /// A pointer to the elements for writing, when ferrox owns them, made
    /// without a reference to them (`Vec::as_mut_ptr`): slices read through
    /// `Deref` stay valid beside writes through it to other elements.
    pub fn owned_mut_ptr(&mut self) -> Option<*mut T> {
        match &mut self.repr {
            Repr::Owned(v) => Some(v.as_mut_ptr()),
            Repr::Foreign { .. } => None,
        }
    }
}

impl<T: Clone> HostVec<T> {
    /// The elements as an owned vector: moved when owned, copied when foreign.
    pub fn into_vec(self) -> Vec<T> {
        match self.repr {
            Repr::Owned(v) => v,
            Repr::Foreign { .. } => self.as_slice().to_vec(),
        }
    }
}

impl<T> Deref for HostVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.repr {
            Repr::Owned(v) => v,
            // SAFETY: `foreign`'s contract: aligned, initialized, readable
            // and unwritten while the owner (dropped after us) lives.
            Repr::Foreign { ptr, len, .. } => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), *len) },
        }
    }
}

impl<T> From<Vec<T>> for HostVec<T> {
    fn from(v: Vec<T>) -> HostVec<T> {
        HostVec { repr: Repr::Owned(v) }
    }
}

/// Cloning copies the elements into a vector of ferrox's own.
impl<T: Clone> Clone for HostVec<T> {
    fn clone(&self) -> HostVec<T> {
        self.as_slice().to_vec().into()
    }
}

impl<T: fmt::Debug> fmt::Debug for HostVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_slice(), f)
    }
}

impl<T: PartialEq> PartialEq for HostVec<T> {
    fn eq(&self, other: &HostVec<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for HostVec<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: PartialEq, const N: usize> PartialEq<[T; N]> for HostVec<T> {
    fn eq(&self, other: &[T; N]) -> bool {
        self.as_slice() == other.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn foreign_memory_reads_as_a_slice_and_releases_its_owner_once() {
        let data = vec![1.0f32, 2.0, 3.0];
        let drops = Arc::new(AtomicUsize::new(0));
        // SAFETY: `data` outlives the HostVec and is not written meanwhile.
        let v = unsafe { HostVec::foreign(NonNull::from(&data[0]), 3, Counted(drops.clone())) };
        assert!(v.is_foreign());
        assert_eq!(v, [1.0, 2.0, 3.0]);
        let copy = v.clone();
        assert!(!copy.is_foreign());
        assert_ne!(copy.as_ptr(), v.as_ptr());
        // SAFETY: as above.
        let v2 = unsafe { HostVec::foreign(NonNull::from(&data[0]), 3, Counted(drops.clone())) };
        let owned = v2.into_vec();
        assert_ne!(owned.as_ptr(), data.as_ptr());
        assert_eq!(owned, data);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        drop(v);
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    }
}
