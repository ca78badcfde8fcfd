//! Elementwise maps over one or two strided (and broadcast) operands.

use std::mem::MaybeUninit;

use super::{build_vec, coalesce, drive, par_ranges, SendPtr, GRAIN};
use crate::tensor::{broadcast_strides, Element, View};

/// `f` applied to every element of `x`, as a fresh row-major vector.
pub fn unary<T: Element, U: Element>(x: &View, f: impl Fn(T) -> U + Sync) -> Vec<U> {
    let n = x.numel();
    if let Some(s) = x.as_slice::<T>() {
        return build_vec(n, |out| {
            let o = SendPtr(out.as_mut_ptr());
            par_ranges(n, |a, b| {
                let o = o;
                for i in a..b {
                    // SAFETY: ranges are disjoint and inside `out`.
                    unsafe { (*o.0.add(i)).write(f(s[i])) };
                }
            })
        });
    }
    let (shape, [st]) = coalesce(&x.shape, [&x.strides]);
    let inner = *st.last().unwrap_or(&1);
    let src = SendPtr(x.ptr::<T>());
    build_vec(n, |out| {
        drive(
            out,
            &shape,
            &[st.clone()],
            |o: &mut [MaybeUninit<U>], [off]| {
                let p = src;
                for (i, slot) in o.iter_mut().enumerate() {
                    // SAFETY: offsets stay inside the view.
                    slot.write(f(unsafe { *p.0.add(off + i * inner) }));
                }
            },
        )
    })
}

/// `f(a, b)` over the broadcast of `a` and `b` to `out_shape`.
pub fn binary<T: Element, U: Element>(
    a: &View,
    b: &View,
    out_shape: &[usize],
    f: impl Fn(T, T) -> U + Sync,
) -> Vec<U> {
    let n: usize = out_shape.iter().product();
    // Fast paths: equal contiguous shapes, and a one-element operand.
    if a.shape.as_slice() == out_shape && b.shape.as_slice() == out_shape {
        if let (Some(sa), Some(sb)) = (a.as_slice::<T>(), b.as_slice::<T>()) {
            return build_vec(n, |out| {
                if n < GRAIN {
                    for ((o, &x), &y) in out.iter_mut().zip(sa).zip(sb) {
                        o.write(f(x, y));
                    }
                } else {
                    let o = SendPtr(out.as_mut_ptr());
                    par_ranges(n, |lo, hi| {
                        let o = o;
                        for i in lo..hi {
                            // SAFETY: disjoint ranges inside `out`.
                            unsafe { (*o.0.add(i)).write(f(sa[i], sb[i])) };
                        }
                    });
                }
            });
        }
    }
    if b.numel() == 1 && a.shape.as_slice() == out_shape {
        if let Some(sa) = a.as_slice::<T>() {
            // SAFETY: a one-element view has a valid first element.
            let y = unsafe { *b.ptr::<T>() };
            return build_vec(n, |out| fill_map(out, sa, |x| f(x, y)));
        }
    }
    if a.numel() == 1 && b.shape.as_slice() == out_shape {
        if let Some(sb) = b.as_slice::<T>() {
            // SAFETY: as above.
            let x = unsafe { *a.ptr::<T>() };
            return build_vec(n, |out| fill_map(out, sb, |y| f(x, y)));
        }
    }
    let sa = broadcast_strides(&a.shape, &a.strides, out_shape);
    let sb = broadcast_strides(&b.shape, &b.strides, out_shape);
    let (shape, [sa, sb]) = coalesce(out_shape, [&sa, &sb]);
    let (ia, ib) = (*sa.last().unwrap_or(&1), *sb.last().unwrap_or(&1));
    let (pa, pb) = (SendPtr(a.ptr::<T>()), SendPtr(b.ptr::<T>()));
    build_vec(n, |out| {
        drive(
            out,
            &shape,
            &[sa.clone(), sb.clone()],
            |o: &mut [MaybeUninit<U>], [oa, ob]| {
                let (pa, pb) = (pa, pb);
                // SAFETY (all arms): offsets derive from each operand's own view.
                unsafe {
                    match (ia, ib) {
                        (1, 0) => {
                            let y = *pb.0.add(ob);
                            for (i, s) in o.iter_mut().enumerate() {
                                s.write(f(*pa.0.add(oa + i), y));
                            }
                        }
                        (0, 1) => {
                            let x = *pa.0.add(oa);
                            for (i, s) in o.iter_mut().enumerate() {
                                s.write(f(x, *pb.0.add(ob + i)));
                            }
                        }
                        _ => {
                            for (i, s) in o.iter_mut().enumerate() {
                                s.write(f(*pa.0.add(oa + i * ia), *pb.0.add(ob + i * ib)));
                            }
                        }
                    }
                }
            },
        )
    })
}

fn fill_map<T: Element, U: Element>(
    out: &mut [MaybeUninit<U>],
    src: &[T],
    f: impl Fn(T) -> U + Sync,
) {
    let n = out.len();
    if n < GRAIN {
        for (o, &x) in out.iter_mut().zip(src) {
            o.write(f(x));
        }
        return;
    }
    let o = SendPtr(out.as_mut_ptr());
    par_ranges(n, |lo, hi| {
        let o = o;
        for i in lo..hi {
            // SAFETY: disjoint ranges inside `out`.
            unsafe { (*o.0.add(i)).write(f(src[i])) };
        }
    });
}

/// `f` over three same-shape operands (used by fused backward rules).
pub fn ternary<T: Element>(a: &[T], b: &[T], c: &[T], f: impl Fn(T, T, T) -> T + Sync) -> Vec<T> {
    let n = a.len();
    build_vec(n, |out| {
        let o = SendPtr(out.as_mut_ptr());
        par_ranges(n, |lo, hi| {
            let o = o;
            for i in lo..hi {
                // SAFETY: disjoint ranges; all slices have `n` elements.
                unsafe { (*o.0.add(i)).write(f(a[i], b[i], c[i])) };
            }
        });
    })
}
