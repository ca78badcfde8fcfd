//! The crate's global allocator: glibc's malloc, except that blocks of at
//! least [`BIG`] bytes start on a 64-byte (cache-line) boundary.
//!
//! glibc aligns to 16 bytes only, so a tensor buffer usually starts 16, 32 or
//! 48 bytes into a cache line and every 64-byte vector load or store of a
//! kernel straddles two lines. For the bandwidth-bound kernels (an optimizer
//! step streams parameters, gradients and states through memory once) that
//! costs about a fifth of the time: a momentum-SGD pass over three 20 MB
//! arrays took 1.7 ms misaligned and 1.35-1.45 ms aligned in a plain C loop on
//! this EPYC. PyTorch's CPU allocator aligns to 64 bytes for the same reason.
//!
//! Small blocks keep plain `malloc` (no padding, no slower path). Every block
//! is released with `free`, which accepts memory from `posix_memalign`.

use std::alloc::{GlobalAlloc, Layout};

/// Blocks from this size on are cache-line aligned.
pub(crate) const BIG: usize = 4096;
const LINE: usize = 64;
/// What glibc's `malloc` guarantees by itself on 64-bit.
const MALLOC_ALIGN: usize = 16;

pub(crate) struct Aligned;

#[inline]
fn wants_line(l: &Layout) -> bool {
    l.size() >= BIG || l.align() > MALLOC_ALIGN
}

unsafe fn aligned(size: usize, align: usize) -> *mut u8 {
    let mut p = std::ptr::null_mut();
    // SAFETY: `align` is a power of two and a multiple of the pointer size.
    if unsafe { libc::posix_memalign(&mut p, align.max(LINE), size) } != 0 {
        return std::ptr::null_mut();
    }
    p as *mut u8
}

// SAFETY: every block comes from glibc (`malloc`, `calloc`, `posix_memalign`,
// `realloc`) with at least the requested alignment, and goes back through
// `free` or `realloc`, which accept all of them.
unsafe impl GlobalAlloc for Aligned {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if wants_line(&l) {
            unsafe { aligned(l.size(), l.align()) }
        } else {
            unsafe { libc::malloc(l.size()) as *mut u8 }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // Blocks above glibc's mmap threshold come zeroed from the kernel
        // through `calloc` without touching a page; their 16-byte offset into
        // the first page is the price of not faulting in memory no one uses.
        if !wants_line(&l)
            || (l.size() >= crate::alloc::MMAP_THRESHOLD && l.align() <= MALLOC_ALIGN)
        {
            return unsafe { libc::calloc(1, l.size()) as *mut u8 };
        }
        let p = unsafe { aligned(l.size(), l.align()) };
        if !p.is_null() {
            unsafe { std::ptr::write_bytes(p, 0, l.size()) };
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, _l: Layout) {
        unsafe { libc::free(p as *mut libc::c_void) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { Layout::from_size_align_unchecked(new_size, l.align()) };
        if !wants_line(&new) {
            return unsafe { libc::realloc(p as *mut libc::c_void, new_size) as *mut u8 };
        }
        if l.align() <= MALLOC_ALIGN {
            // glibc grows in place when it can; keep that unless the block moved
            // to a misaligned address.
            let q = unsafe { libc::realloc(p as *mut libc::c_void, new_size) as *mut u8 };
            if q.is_null() || q as usize % LINE == 0 {
                return q;
            }
            let r = unsafe { aligned(new_size, l.align()) };
            if !r.is_null() {
                unsafe {
                    std::ptr::copy_nonoverlapping(q, r, new_size);
                    libc::free(q as *mut libc::c_void);
                }
                return r;
            }
            // Out of memory for the aligned copy: the misaligned block is
            // still a valid one.
            return q;
        }
        let r = unsafe { aligned(new_size, l.align()) };
        if !r.is_null() {
            unsafe {
                std::ptr::copy_nonoverlapping(p, r, l.size().min(new_size));
                libc::free(p as *mut libc::c_void);
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn big_blocks_are_line_aligned() {
        for n in [4096usize, 10_000, 1 << 20, 3 << 20] {
            let v: Vec<f32> = Vec::with_capacity(n);
            assert_eq!(v.as_ptr() as usize % 64, 0, "{n}");
            let z = vec![0.0f64; n];
            assert_eq!(z.as_ptr() as usize % 64, 0, "{n}");
            assert!(z.iter().all(|&x| x == 0.0));
        }
        let mut v: Vec<u8> = Vec::with_capacity(10);
        v.extend(0..10u8);
        for i in 0..20_000u32 {
            v.push(i as u8);
        }
        assert_eq!(v.as_ptr() as usize % 64, 0);
        assert_eq!(&v[..10], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
}
