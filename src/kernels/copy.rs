//! Strided reads and writes: materialising a view, copying into a view.

use std::mem::MaybeUninit;

use super::{build_vec, coalesce, drive, par_ranges, SendPtr};
use crate::tensor::{Element, View};

/// The elements of `v` in row-major order.
pub fn gather<T: Element>(v: &View) -> Vec<T> {
    let n = v.numel();
    if let Some(s) = v.as_slice::<T>() {
        // One thread's memcpy does not saturate the memory bus: large copies
        // go in parallel blocks (a 16 MB clone took twice PyTorch's time).
        return build_vec(n, |out| {
            let o = SendPtr(out.as_mut_ptr());
            par_ranges(n, |lo, hi| {
                // SAFETY: `MaybeUninit<T>` has `T`'s layout; the ranges are
                // disjoint and inside both buffers.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        s.as_ptr().add(lo),
                        o.get().add(lo).cast::<T>(),
                        hi - lo,
                    )
                };
            });
        });
    }
    let (shape, [st]) = coalesce(&v.shape, [&v.strides]);
    let src = SendPtr(v.ptr::<T>());
    let inner = *st.last().unwrap_or(&1);
    build_vec(n, |out| {
        drive(
            out,
            &shape,
            std::array::from_ref(&st),
            |o: &mut [MaybeUninit<T>], [off]| {
                let p = src;
                for (i, slot) in o.iter_mut().enumerate() {
                    // SAFETY: offsets come from the view's own shape and strides.
                    slot.write(unsafe { *p.0.add(off + i * inner) });
                }
            },
        )
    })
}

/// Writes `src` (row-major, `dst.numel()` elements, or one element to broadcast)
/// into the possibly strided view `dst`.
pub fn scatter<T: Element>(dst: &View, src: &[T]) {
    let n = dst.numel();
    debug_assert!(src.len() == n || src.len() == 1);
    if n > 1 && src.len() == n && overlaps(dst, src) {
        // A source that is part of the destination's memory (`x[1:] = x[:-1]`)
        // is read from a snapshot, as if the whole value were taken first.
        let snapshot = crate::error::copied_vec(src);
        return scatter(dst, &snapshot);
    }
    let base = SendPtr(dst.ptr::<T>());
    let srcp = SendPtr(src.as_ptr() as *mut T);
    if src.len() == n && dst.is_contiguous() {
        // Every in-place op that computes out of place ends here: one block
        // copy per task instead of an element loop on one thread (a 1.5 MB
        // bias add took ten times its out-of-place form).
        par_ranges(n, |lo, hi| {
            let (b, s) = (base, srcp);
            // SAFETY: the ranges are disjoint and inside both buffers, which
            // do not overlap (the caller skips a result that aliases `dst`).
            unsafe { std::ptr::copy_nonoverlapping(s.get().add(lo), b.get().add(lo), hi - lo) };
        });
        return;
    }
    let (shape, [st]) = coalesce(&dst.shape, [&dst.strides]);
    let inner = *st.last().unwrap_or(&1);
    let single = src.len() == 1;
    super::for_each_row(
        &shape,
        std::array::from_ref(&st),
        0,
        n,
        |pos, len, [off]| {
            let (b, s) = (base, srcp);
            if inner == 1 && !single {
                // SAFETY: a unit-stride run of `len` elements inside the view,
                // and `len` source elements from `pos`.
                unsafe { std::ptr::copy_nonoverlapping(s.0.add(pos), b.0.add(off), len) };
                return;
            }
            for i in 0..len {
                // SAFETY: in bounds by the view's construction; `src` has `n` (or 1) elements.
                unsafe { *b.0.add(off + i * inner) = *s.0.add(if single { 0 } else { pos + i }) };
            }
        },
    );
}

/// Whether `src`'s elements lie within the span of memory `dst` can touch.
fn overlaps<T: Element>(dst: &View, src: &[T]) -> bool {
    let size = std::mem::size_of::<T>();
    let start = dst.ptr::<T>() as usize;
    let reach: usize = dst
        .shape
        .iter()
        .zip(&dst.strides)
        .map(|(&d, &st)| d.saturating_sub(1) * st)
        .sum();
    let end = start + (reach + 1) * size;
    let (s0, s1) = (
        src.as_ptr() as usize,
        src.as_ptr() as usize + std::mem::size_of_val(src),
    );
    s0 < end && start < s1
}
