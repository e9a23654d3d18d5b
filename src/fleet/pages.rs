//! Large vectors whose pages the kernel may back with 2 MiB pages.
//!
//! At a million hosts `fleet analyze` writes some 150 MB of fresh memory
//! (rows, sorted columns); in 4 KiB pages that is tens of thousands of page
//! faults, a fifth of the run's CPU time. Where transparent huge pages are
//! enabled for regions that ask (`madvise`, the common default), one fault
//! maps 2 MiB. Advice only: without huge pages nothing changes.

const HUGE: usize = 2 << 20;

/// Ask for huge pages over the 2 MiB-aligned part of `v`'s whole capacity.
fn advise<T>(v: &Vec<T>) {
    let bytes = v.capacity() * size_of::<T>();
    let start = v.as_ptr() as usize;
    let (from, to) = (start.next_multiple_of(HUGE), (start + bytes) / HUGE * HUGE);
    if to > from {
        // SAFETY: a page-aligned range inside an allocation this vector owns;
        // the advice changes how its pages are backed, never their contents.
        unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE) };
    }
}

/// `Vec::with_capacity(n)`, huge pages asked for.
pub(crate) fn with_capacity<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    advise(&v);
    v
}

/// `v.reserve(additional)`, huge pages asked for when the buffer moved or
/// grew. Best called once with the final size: a growing vector is copied,
/// and the copy's pages are faulted in before the advice can apply.
pub(crate) fn reserve<T>(v: &mut Vec<T>, additional: usize) {
    let cap = v.capacity();
    v.reserve(additional);
    if v.capacity() != cap {
        advise(v);
    }
}
