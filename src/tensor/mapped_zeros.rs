//! Large zero blocks that the operating system zeroes on first touch.
//!
//! The gradient of a rounding or sign function is a tensor of zeros, and
//! writing megabytes of them costs more than the function itself: PyTorch
//! returns an immutable `ZeroTensor` for `sgn` (whose `.grad` then refuses
//! `add_`). Here the block is fresh anonymous memory marked for huge pages,
//! an ordinary mutable tensor: reading it maps the kernel's shared zero page
//! (one fault per 2 MiB), and only a write makes the kernel clear real
//! pages, as a `memset` would have. Without transparent huge pages a read
//! would fault every 4 KiB (slower than writing the zeros), so the written
//! form is kept there, and for blocks too small to hold a huge page.

use std::any::Any;

/// A huge page's size on x86-64 and aarch64 Linux with 4 KiB base pages.
const HUGE: usize = 2 << 20;

/// Blocks below this many bytes are written: the mapping and unmapping
/// calls would cost more than the stores.
pub(crate) const MIN_BYTES: usize = 2 * HUGE;

/// An anonymous mapping, unmapped when the storage that owns it drops.
struct Mapping {
    base: usize,
    len: usize,
}

impl Drop for Mapping {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        // SAFETY: `base..base + len` is the mapping `zeroed_block` made, and
        // nothing reads it once its storage is gone.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

/// Whether the kernel backs a `MADV_HUGEPAGE` region with huge pages and
/// maps the huge zero page on a read fault.
#[cfg(target_os = "linux")]
fn huge_zero_pages() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let enabled = read("/sys/kernel/mm/transparent_hugepage/enabled");
        let zero = read("/sys/kernel/mm/transparent_hugepage/use_zero_page");
        (enabled.contains("[always]") || enabled.contains("[madvise]")) && zero.trim() == "1"
    })
}

/// `bytes` of zeros, 2 MiB aligned, as (address, owner), or `None` when the
/// block is small, the kernel lacks huge zero pages, or the mapping fails
/// (the caller then writes its zeros, and reports a real shortage the usual
/// way).
pub(crate) fn zeroed_block(bytes: usize) -> Option<(*mut u8, Box<dyn Any + Send + Sync>)> {
    #[cfg(target_os = "linux")]
    {
        if bytes < MIN_BYTES || !huge_zero_pages() {
            return None;
        }
        let used = bytes.checked_next_multiple_of(HUGE)?;
        // One huge page of slack, so an aligned start exists.
        let len = used.checked_add(HUGE)?;
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // touched, and the result is checked before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let base = base as usize;
        let start = base.next_multiple_of(HUGE);
        // SAFETY: `start..start + used` lies inside the mapping. The advice
        // only changes how pages are backed; if the kernel declines it the
        // memory is still zeroed, in 4 KiB pages.
        unsafe {
            libc::madvise(start as *mut libc::c_void, used, libc::MADV_HUGEPAGE);
        }
        Some((start as *mut u8, Box::new(Mapping { base, len })))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = bytes;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_block_reads_zero_and_keeps_writes() {
        let Some((p, owner)) = zeroed_block(MIN_BYTES + 12) else {
            return; // no huge zero pages on this kernel: the written form serves
        };
        assert_eq!(p as usize % HUGE, 0);
        let n = (MIN_BYTES + 12) / 4;
        // SAFETY: the block holds `n` floats and lives as long as `owner`.
        let s = unsafe { std::slice::from_raw_parts_mut(p as *mut f32, n) };
        assert!(s.iter().all(|&x| x == 0.0));
        s[n - 1] = 3.0;
        s[0] = -1.0;
        assert_eq!((s[0], s[1], s[n - 1]), (-1.0, 0.0, 3.0));
        drop(owner);
    }

    #[test]
    fn small_blocks_are_left_to_the_caller() {
        assert!(zeroed_block(MIN_BYTES - 1).is_none());
        assert!(zeroed_block(0).is_none());
    }
}
