//! The wrapper's allocator: its first allocations are carved in order
//! from a static block, the rest go to the system allocator. A wrapper
//! process lives for a few hundred microseconds and ends in `execve`,
//! which frees everything at once; musl's allocator maps and unmaps a
//! group of slots for many of its allocations, and at fifty creates at
//! once those `mmap`s, `munmap`s and their TLB flushes were a tenth of the
//! wrapper's CPU. Carving from a block in `.bss` costs no system call (the
//! kernel zero-fills the pages touched, as for any heap). A freed block is
//! taken back only when it was the last one carved, and the last block
//! grows in place, which covers the buffer that is read and dropped and
//! the vector that grows; anything else freed in the block stays until
//! the process ends. The block is small enough that a create of the
//! largest spec peaks within its bound: a spec of up to about 50 KB fits
//! whole, a larger one spills into the system allocator, which reuses
//! what is freed. (`static-alloc`'s `Bump` has neither a fallback nor growth in
//! place, which is all this adds to a bump allocator.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// A block of `N` bytes in front of [`System`].
pub struct Arena<const N: usize> {
    block: UnsafeCell<[u8; N]>,
    /// Bytes of `block` carved so far, from its start.
    used: AtomicUsize,
}

// SAFETY: `used` hands out each byte of `block` to one caller at a time
// (a compare-and-swap per carve), so shared use from threads is sound.
unsafe impl<const N: usize> Sync for Arena<N> {}

impl<const N: usize> Arena<N> {
    /// All zero, so that a `static` of it lives in `.bss`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Arena {
            block: UnsafeCell::new([0; N]),
            used: AtomicUsize::new(0),
        }
    }

    fn base(&self) -> usize {
        self.block.get() as usize
    }

    /// The offset of `ptr` in the block, if it points into it.
    fn offset(&self, ptr: *mut u8) -> Option<usize> {
        (ptr as usize).checked_sub(self.base()).filter(|&o| o < N)
    }

    /// `layout` carved from the free end; `None` when it does not fit.
    fn carve(&self, layout: Layout) -> Option<*mut u8> {
        let base = self.base();
        let mut used = self.used.load(Relaxed);
        loop {
            // `align` is a power of two: round the address up to it.
            let start = (base + used).checked_add(layout.align() - 1)? & !(layout.align() - 1);
            let end = (start - base).checked_add(layout.size())?;
            if end > N {
                return None;
            }
            match self.used.compare_exchange_weak(used, end, Relaxed, Relaxed) {
                Ok(_) => return Some(start as *mut u8),
                Err(now) => used = now,
            }
        }
    }
}

// SAFETY: a carved block is `layout.size()` bytes at `layout.align()`
// inside `block`, given to one caller until it is freed; everything else
// is the system allocator's own contract.
unsafe impl<const N: usize> GlobalAlloc for Arena<N> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.carve(layout) {
            Some(p) => p,
            // SAFETY: the caller's layout, as given.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match self.carve(layout) {
            Some(p) => {
                // A block taken back and carved again is not zero.
                // SAFETY: `p` is `layout.size()` bytes of the block.
                unsafe { p.write_bytes(0, layout.size()) };
                p
            }
            // SAFETY: the caller's layout, as given.
            None => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match self.offset(ptr) {
            // The last block carved goes back; any other stays carved.
            Some(start) => {
                let _ = self
                    .used
                    .compare_exchange(start + layout.size(), start, Relaxed, Relaxed);
            }
            // SAFETY: `ptr` came from the system allocator with `layout`.
            None => unsafe { System.dealloc(ptr, layout) },
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some(start) = self.offset(ptr) else {
            // SAFETY: `ptr` came from the system allocator with `layout`.
            return unsafe { System.realloc(ptr, layout, new_size) };
        };
        // The last block carved grows or shrinks where it is.
        let in_place = start.checked_add(new_size).is_some_and(|end| end <= N)
            && self
                .used
                .compare_exchange(start + layout.size(), start + new_size, Relaxed, Relaxed)
                .is_ok();
        if in_place || new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: the caller guarantees `new_size`, rounded up to the
        // alignment, does not overflow `isize`.
        let grown = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a non-zero size, as `layout`'s.
        let new = unsafe { self.alloc(grown) };
        if !new.is_null() {
            // SAFETY: both hold at least `layout.size()` bytes and are
            // distinct blocks.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size());
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    /// A block of one page, on the heap (a test's stack is small).
    fn small() -> Box<Arena<4096>> {
        Box::new(Arena::new())
    }

    #[test]
    fn blocks_are_aligned_distinct_and_inside_until_the_block_is_full() {
        let a = small();
        unsafe {
            let p = a.alloc(layout(3, 1));
            let q = a.alloc(layout(8, 8));
            assert_eq!(a.offset(p), Some(0));
            assert_eq!(a.offset(q).unwrap() % 8, 0);
            assert!(q as usize >= p as usize + 3);
            let big = a.alloc(layout(8192, 8));
            assert_eq!(a.offset(big), None, "too large: from the system");
            big.write_bytes(7, 8192);
            a.dealloc(big, layout(8192, 8));
        }
    }

    #[test]
    fn the_last_block_goes_back_and_grows_in_place_others_stay() {
        let a = small();
        unsafe {
            let p = a.alloc(layout(16, 8));
            let q = a.alloc(layout(16, 8));
            a.dealloc(p, layout(16, 8));
            assert_eq!(a.used.load(Relaxed), 32, "not the last: stays");
            let grown = a.realloc(q, layout(16, 8), 1000);
            assert_eq!(grown, q, "the last grows where it is");
            q.write_bytes(9, 1000);
            a.dealloc(q, layout(1000, 8));
            assert_eq!(a.used.load(Relaxed), 16, "the last goes back");
            let r = a.alloc_zeroed(layout(64, 8));
            assert_eq!(r, q);
            assert!(std::slice::from_raw_parts(r, 64).iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn a_block_that_cannot_grow_in_place_moves_with_its_bytes() {
        let a = small();
        unsafe {
            let p = a.alloc(layout(4, 1));
            p.copy_from([1, 2, 3, 4].as_ptr(), 4);
            let _q = a.alloc(layout(4, 1));
            let moved = a.realloc(p, layout(4, 1), 100);
            assert_ne!(moved, p);
            assert_eq!(std::slice::from_raw_parts(moved, 4), [1, 2, 3, 4]);
            let out = a.realloc(moved, layout(100, 1), 10_000);
            assert_eq!(a.offset(out), None, "past the block: to the system");
            assert_eq!(std::slice::from_raw_parts(out, 4), [1, 2, 3, 4]);
            let back = a.realloc(out, layout(10_000, 1), 20_000);
            assert_eq!(std::slice::from_raw_parts(back, 4), [1, 2, 3, 4]);
            a.dealloc(back, layout(20_000, 1));
        }
    }
}
