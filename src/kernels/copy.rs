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
    let (shape, [st]) = coalesce(&dst.shape, [&dst.strides]);
    let base = SendPtr(dst.ptr::<T>());
    let inner = *st.last().unwrap_or(&1);
    let srcp = SendPtr(src.as_ptr() as *mut T);
    let single = src.len() == 1;
    super::for_each_row(
        &shape,
        std::array::from_ref(&st),
        0,
        n,
        |pos, len, [off]| {
            let (b, s) = (base, srcp);
            for i in 0..len {
                // SAFETY: in bounds by the view's construction; `src` has `n` (or 1) elements.
                unsafe { *b.0.add(off + i * inner) = *s.0.add(if single { 0 } else { pos + i }) };
            }
        },
    );
}
