//! Multi-tensor optimizer steps: every parameter of a group updated in place
//! by one fused pass, split across the pool by tensor and chunk.
//!
//! Nothing is recorded (an optimizer step runs under `no_grad` in PyTorch);
//! each written tensor's version counter is bumped, so a graph that saved a
//! parameter before the step refuses to use it afterwards.

use crate::error::{Error, Result};
use crate::kernels::optim::{step, Rule};
use crate::kernels::{parallel, SendPtr};
use crate::tensor::{bf16, f16, fmt_shape, DType, Element, Tensor};

/// Elements per task: large enough that a task costs far more than claiming
/// it, small enough that two threads end within a few microseconds.
const CHUNK: usize = 1 << 16;

/// Most tensors a row may hold: parameter, gradient and three states.
const MAX_ROW: usize = 5;
/// Updates of fewer elements run on the calling thread: a step touches each
/// element a few times, so 100k of them take about 15 us, less than waking
/// a sleeping pool thread costs (a small model's step paid more for the
/// wake-up than for the update).
const PARALLEL_ELEMS: usize = 1 << 17;

/// Applies `rule` to each row `[param, grad, states...]` with the row's
/// scalars `per[i]`. Every tensor of a row must be contiguous with the
/// parameter's float dtype and shape, and no written tensor may share memory
/// with any other tensor of the call; nothing is written unless all checks pass.
pub fn foreach_step(rule: &Rule, rows: &[Vec<Tensor>], per: &[[f64; 3]]) -> Result<()> {
    let width = 2 + rule.states();
    if per.len() != rows.len() {
        return Err(Error::value(format!(
            "expected scalars for {} tensors, got {}",
            rows.len(),
            per.len()
        )));
    }
    // (start, end, written, row) byte ranges for the overlap check.
    let mut ranges: Vec<(usize, usize, bool, usize)> = Vec::with_capacity(rows.len() * width);
    let mut ptrs: Vec<([SendPtr<u8>; MAX_ROW], usize, DType)> = Vec::with_capacity(rows.len());
    for (i, row) in rows.iter().enumerate() {
        if row.len() != width {
            return Err(Error::value(format!(
                "expected {width} tensors per parameter (param, grad and {} states), got {}",
                width - 2,
                row.len()
            )));
        }
        let p = row[0].view();
        let dt = p.dtype();
        if !dt.is_float() {
            return Err(Error::type_error(format!(
                "optimizers update floating point parameters, got {dt}"
            )));
        }
        let mut slot = [SendPtr(std::ptr::null_mut::<u8>()); MAX_ROW];
        for (k, t) in row.iter().enumerate() {
            let v = t.view();
            let what = if k == 0 {
                "parameter"
            } else if k == 1 {
                "gradient"
            } else {
                "state"
            };
            if v.dtype() != dt {
                return Err(Error::type_error(format!(
                    "{what} has dtype {} but the parameter has {dt}",
                    v.dtype()
                )));
            }
            if v.shape != p.shape {
                return Err(Error::runtime(format!(
                    "{what} has shape {} but the parameter has {}",
                    fmt_shape(&v.shape),
                    fmt_shape(&p.shape)
                )));
            }
            if !v.is_contiguous() {
                return Err(Error::runtime(format!("{what} must be contiguous")));
            }
            let start = v.storage.as_ptr() as usize + v.offset * dt.size();
            let end = start + v.numel() * dt.size();
            if end > start {
                ranges.push((start, end, k != 1, i));
            }
            slot[k] = SendPtr(start as *mut u8);
        }
        ptrs.push((slot, p.numel(), dt));
    }
    ranges.sort_unstable();
    for (j, a) in ranges.iter().enumerate() {
        for b in &ranges[j + 1..] {
            if b.0 >= a.1 {
                break;
            }
            if a.2 || b.2 {
                return Err(Error::runtime(
                    "an optimizer step's parameters, gradients and states must not share memory",
                ));
            }
        }
    }

    let mut tasks: Vec<(usize, usize, usize)> = Vec::new();
    let mut total = 0;
    for (i, &(_, n, _)) in ptrs.iter().enumerate() {
        total += n;
        let mut s = 0;
        while s < n {
            let len = CHUNK.min(n - s);
            tasks.push((i, s, len));
            s += len;
        }
    }
    let run = |t: usize| {
        let (i, start, len) = tasks[t];
        let (slot, _, dt) = &ptrs[i];
        match *dt {
            // SAFETY (both): as below.
            DType::F16 => unsafe {
                low_precision_step::<f16>(rule, per[i], slot, start, len, width)
            },
            DType::BF16 => unsafe {
                low_precision_step::<bf16>(rule, per[i], slot, start, len, width)
            },
            _ => crate::dispatch_float!(*dt, T => {
                // SAFETY: each pointer is the first element of a contiguous run of
                // the row's `n` elements (checked above); tasks cover disjoint
                // chunks, and written tensors overlap nothing else in the call.
                unsafe {
                    let at = |k: usize| (slot[k].get() as *mut T).add(start);
                    let p = std::slice::from_raw_parts_mut(at(0), len);
                    let g = std::slice::from_raw_parts(at(1) as *const T, len);
                    let mut states: [&mut [T]; MAX_ROW - 2] = Default::default();
                    for (k, s) in states.iter_mut().enumerate().take(width - 2) {
                        *s = std::slice::from_raw_parts_mut(at(k + 2), len);
                    }
                    step::<T>(rule, per[i], p, g, &mut states[..width - 2]);
                }
            }),
        }
    };
    parallel::run(total, |threads| {
        if threads == 1 || total < PARALLEL_ELEMS {
            (0..tasks.len()).for_each(run);
        } else {
            parallel::tasks(tasks.len(), run);
        }
    });
    for row in rows {
        for (k, t) in row.iter().enumerate() {
            if k != 1 {
                t.view().storage.bump_version();
            }
        }
    }
    Ok(())
}

/// One chunk of a float16/bfloat16 row: the parameter, gradient and states
/// read into float32, stepped there, and the parameter and states rounded
/// back once (PyTorch keeps an optimizer's state in the parameter's dtype and
/// computes each update in float32).
///
/// # Safety
/// As the float32/float64 path: each pointer is the first element of a
/// contiguous run of the row's elements of type `H`, covering `start + len`.
unsafe fn low_precision_step<H: Element>(
    rule: &Rule,
    per: [f64; 3],
    slot: &[SendPtr<u8>; MAX_ROW],
    start: usize,
    len: usize,
    width: usize,
) {
    let at = |k: usize| unsafe { (slot[k].get() as *mut H).add(start) };
    let mut bufs: Vec<Vec<f32>> = (0..width)
        .map(|k| {
            // SAFETY: the caller's contract.
            let src = unsafe { std::slice::from_raw_parts(at(k) as *const H, len) };
            src.iter().map(|x| x.to_f64() as f32).collect()
        })
        .collect();
    let (pg, states) = bufs.split_at_mut(2);
    let (p, g) = pg.split_at_mut(1);
    let mut st: Vec<&mut [f32]> = states.iter_mut().map(|v| v.as_mut_slice()).collect();
    step::<f32>(rule, per, &mut p[0], &g[0], &mut st);
    for (k, buf) in bufs.iter().enumerate() {
        if k == 1 {
            continue;
        }
        // SAFETY: the caller's contract; the gradient (k == 1) is not written.
        let dst = unsafe { std::slice::from_raw_parts_mut(at(k), len) };
        for (d, &x) in dst.iter_mut().zip(buf) {
            *d = H::from_f64(x as f64);
        }
    }
}
