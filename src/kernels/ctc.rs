//! Connectionist temporal classification (Graves et al., 2006): the forward
//! (alpha) and backward (beta) recursions over a sample's extended label
//! sequence (a blank before, between and after the labels), in log space and
//! in float64 whatever the input's dtype, so long sequences neither underflow
//! nor lose the small path probabilities that a float32 sum would round away.
//!
//! `lp` is the whole `(T, N, C)` log-probability block, row-major; a sample is
//! column `n` of it. A sample's alpha table has one row per frame it uses
//! (its input length) and one column per extended position; the batch's
//! tables lie end to end in one buffer.
//!
//! A frame's positions depend only on the previous (next) frame's, so each
//! frame is one pass over its positions whose log-sum-exps run in vector
//! lanes (`vmath`'s float64 `exp` and `ln`, within an ulp). The samples are
//! independent tasks on the pool; a sample's arithmetic is the same whichever
//! thread runs it, so the results do not depend on the thread count.

use super::vmath::{detected, exp_f64, isa, isa_loop, ln_f64, Isa};
use super::{pick, SendPtr};

const NEG_INF: f64 = f64::NEG_INFINITY;

/// One sample of a batch: its labels (without blanks) and frame count.
pub(crate) struct Sample<'a> {
    pub labels: &'a [i64],
    pub frames: usize,
}

impl Sample<'_> {
    /// Extended positions (`2 * labels + 1`).
    fn positions(&self) -> usize {
        2 * self.labels.len() + 1
    }

    /// Elements of the sample's alpha table.
    pub(crate) fn table_len(&self) -> usize {
        self.frames * self.positions()
    }
}

/// The block's geometry: `N` samples, `C` classes and the blank class.
#[derive(Clone, Copy)]
pub(crate) struct Block {
    pub batch: usize,
    pub classes: usize,
    pub blank: usize,
}

impl Block {
    #[inline]
    fn at(&self, lp: &[f64], t: usize, n: usize, c: usize) -> f64 {
        lp[(t * self.batch + n) * self.classes + c]
    }
}

/// `e^x` for the log-sum-exps: `vmath`'s form takes `|x| <= 760`; below, the
/// true value is 0 as `e^-760` rounds to; NaN passes the comparisons.
#[inline(always)]
fn exp_clamped(x: f64) -> f64 {
    exp_f64(pick(x < -760.0, -760.0, pick(x > 760.0, 760.0, x)))
}

/// `ln(e^a + e^b + e^c)`: `-inf` when all three are (whatever else), NaN
/// when a NaN is among them, branch free.
#[inline(always)]
fn lse3(a: f64, b: f64, c: f64) -> f64 {
    let m = a.max(b).max(c);
    let s = exp_clamped(a - m) + exp_clamped(b - m) + exp_clamped(c - m);
    // `s` is in [1, 3] unless it is NaN (`ln_f64` takes positive finite values).
    let r = pick(s.is_nan(), f64::NAN, m + ln_f64(pick(s.is_nan(), 1.0, s)));
    pick(m == NEG_INF, NEG_INF, r)
}

isa_loop! {
    /// One frame of a recursion: `out[p] = lse3(x0[p], x1[p], x2[p] where
    /// two[p], else -inf) + emit[p]`.
    fn lse_row / lse_row_on<>(
        out: &mut [f64],
        x0: &[f64],
        x1: &[f64],
        x2: &[f64],
        two: &[bool],
        emit: &[f64]
    ) where [] {
        let n = out.len();
        let (x0, x1, x2, two, emit) = (&x0[..n], &x1[..n], &x2[..n], &two[..n], &emit[..n]);
        for p in 0..n {
            out[p] = lse3(x0[p], x1[p], pick(two[p], x2[p], NEG_INF)) + emit[p];
        }
    }
}

isa_loop! {
    /// `out[p] = e^(a[p] + b[p] - c[p] - d)`, clamped as `exp_clamped`.
    fn exp_sum_row / exp_sum_row_on<>(out: &mut [f64], a: &[f64], b: &[f64], c: &[f64], d: f64)
    where [] {
        let n = out.len();
        let (a, b, c) = (&a[..n], &b[..n], &c[..n]);
        for p in 0..n {
            out[p] = exp_clamped(a[p] + b[p] - c[p] - d);
        }
    }
}

/// The extended sequence's classes and, per position, whether a path may
/// skip onto it from two positions back (a label unlike the one before the
/// blank between them).
fn extended(labels: &[i64], blank: usize) -> (Vec<usize>, Vec<bool>) {
    let ext: Vec<usize> = (0..2 * labels.len() + 1)
        .map(|s| {
            if s % 2 == 0 {
                blank
            } else {
                labels[s / 2] as usize
            }
        })
        .collect();
    let skip = (0..ext.len())
        .map(|s| s >= 2 && ext[s] != blank && ext[s] != ext[s - 2])
        .collect();
    (ext, skip)
}

/// Fills `alpha` (`frames` rows of `2 * labels + 1`) for sample `n` and
/// returns the log-probability of its labels (`-inf` when no alignment
/// exists or it has no frames).
fn alpha_of(lp: &[f64], b: Block, n: usize, s: &Sample<'_>, alpha: &mut [f64]) -> f64 {
    let (ext, skip) = extended(s.labels, b.blank);
    let l = ext.len();
    if s.frames == 0 {
        return NEG_INF;
    }
    for (p, a) in alpha[..l].iter_mut().enumerate() {
        // A path starts on the first blank or the first label.
        *a = if p < 2 {
            b.at(lp, 0, n, ext[p])
        } else {
            NEG_INF
        };
    }
    // The previous frame with two impossible positions in front, so that
    // positions p - 1 and p - 2 are plain reads.
    let mut pad = vec![NEG_INF; l + 2];
    let mut emit = vec![0.0; l];
    for t in 1..s.frames {
        let (done, rest) = alpha.split_at_mut(t * l);
        pad[2..].copy_from_slice(&done[(t - 1) * l..]);
        for (e, &c) in emit.iter_mut().zip(&ext) {
            *e = b.at(lp, t, n, c);
        }
        lse_row(&mut rest[..l], &pad[2..], &pad[1..], &pad, &skip, &emit);
    }
    let last = &alpha[(s.frames - 1) * l..s.frames * l];
    let before = if l >= 2 { last[l - 2] } else { NEG_INF };
    lse3(last[l - 1], before, NEG_INF)
}

/// Where each sample's table starts in the batch's buffer, and its length.
pub(crate) fn table_starts(samples: &[Sample<'_>]) -> (Vec<usize>, usize) {
    let mut at = 0;
    let starts = samples
        .iter()
        .map(|s| {
            let here = at;
            at += s.table_len();
            here
        })
        .collect();
    (starts, at)
}

/// Runs `f(n)` for every sample, on the pool when the batch's work pays for it.
fn each_sample(samples: &[Sample<'_>], f: impl Fn(usize) + Sync) {
    let work: usize = samples.iter().map(|s| s.table_len()).sum();
    // A position costs four transcendental functions: far more than an
    // element of an elementwise loop, hence the smaller grain.
    super::parallel::run(work * 8, |threads| {
        if threads == 1 {
            (0..samples.len()).for_each(&f);
        } else {
            super::parallel::tasks(samples.len(), f);
        }
    });
}

/// The alpha tables of a batch (end to end, sample `n`'s from
/// `table_starts(samples).0[n]`) and each sample's log-probability.
pub(crate) fn forward(lp: &[f64], b: Block, samples: &[Sample<'_>]) -> (Vec<f64>, Vec<f64>) {
    let (starts, total) = table_starts(samples);
    let mut tables = vec![0.0; total];
    let mut logp = vec![0.0; samples.len()];
    let (tp, lpp) = (SendPtr(tables.as_mut_ptr()), SendPtr(logp.as_mut_ptr()));
    each_sample(samples, |n| {
        let s = &samples[n];
        // SAFETY: each sample's table and log-probability belong to one task.
        let alpha =
            unsafe { std::slice::from_raw_parts_mut(tp.get().add(starts[n]), s.table_len()) };
        let l = alpha_of(lp, b, n, s, alpha);
        unsafe { *lpp.get().add(n) = l };
    });
    (tables, logp)
}

/// Adds `scale * d log p / d lp[t, n, c]` of sample `n` into its column of
/// `grad` (`(T, N, C)`, row-major, through `grad`), from its alpha table and
/// log-probability: the beta recursion runs backwards one frame at a time,
/// and the paths through each position at frame `t` (alpha + beta, counting
/// that frame's emission twice) are summed per class.
///
/// # Safety
/// `grad` points at `lp.len()` elements, and no one else touches sample
/// `n`'s column while this runs.
#[allow(clippy::too_many_arguments)]
unsafe fn grad_of(
    lp: &[f64],
    b: Block,
    n: usize,
    s: &Sample<'_>,
    alpha: &[f64],
    logp: f64,
    scale: f64,
    grad: SendPtr<f64>,
) {
    let (ext, skip) = extended(s.labels, b.blank);
    let l = ext.len();
    // No alignment, no gradient (PyTorch's infinite loss has a zero one).
    if s.frames == 0 || logp == NEG_INF || scale == 0.0 {
        return;
    }
    // The next frame's beta with two impossible positions behind, so that
    // positions p + 1 and p + 2 are plain reads; `skip2[p]` is `skip[p + 2]`.
    let mut next = vec![NEG_INF; l + 2];
    let mut beta = vec![NEG_INF; l];
    let mut skip2 = vec![false; l];
    skip2[..l.saturating_sub(2)].copy_from_slice(&skip[2.min(l)..]);
    let mut emit = vec![0.0; l];
    let mut paths = vec![0.0; l];
    let last = s.frames - 1;
    for p in l.saturating_sub(2)..l {
        beta[p] = b.at(lp, last, n, ext[p]);
    }
    for t in (0..s.frames).rev() {
        for (e, &c) in emit.iter_mut().zip(&ext) {
            *e = b.at(lp, t, n, c);
        }
        if t < last {
            next[..l].copy_from_slice(&beta);
            lse_row(&mut beta, &next, &next[1..], &next[2..], &skip2, &emit);
        }
        exp_sum_row(&mut paths, &alpha[t * l..(t + 1) * l], &beta, &emit, logp);
        let base = (t * b.batch + n) * b.classes;
        for p in 0..l {
            let w = alpha[t * l + p] + beta[p] - emit[p] - logp;
            // A NaN in the inputs reaches the gradient, as it reaches the loss.
            if w != NEG_INF {
                *grad.get().add(base + ext[p]) += scale * paths[p];
            }
        }
    }
}

/// `sum_n scale[n] * d log p_n / d lp` over the batch, as a `(T, N, C)` block,
/// from `forward`'s tables.
pub(crate) fn backward(
    lp: &[f64],
    b: Block,
    samples: &[Sample<'_>],
    tables: &[f64],
    logp: &[f64],
    scale: &[f64],
) -> Vec<f64> {
    let (starts, _) = table_starts(samples);
    let mut grad = vec![0.0; lp.len()];
    // Each sample writes only its own column's elements.
    let gp = SendPtr(grad.as_mut_ptr());
    each_sample(samples, |n| {
        let s = &samples[n];
        let alpha = &tables[starts[n]..starts[n] + s.table_len()];
        // SAFETY: `grad` has `lp.len()` elements; sample `n`'s column is this task's.
        unsafe { grad_of(lp, b, n, s, alpha, logp[n], scale[n], gp) };
    });
    grad
}

#[cfg(test)]
mod tests {
    use super::*;

    /// log p of `labels` by summing over every alignment of `frames` frames
    /// (each frame any class; collapse repeats, drop blanks).
    fn brute(lp: &[f64], b: Block, n: usize, labels: &[i64], frames: usize) -> f64 {
        let mut total = 0.0;
        let count = b.classes.pow(frames as u32);
        for code in 0..count {
            let mut k = code;
            let mut path = Vec::new();
            let mut logq = 0.0;
            for t in 0..frames {
                let c = k % b.classes;
                k /= b.classes;
                path.push(c);
                logq += b.at(lp, t, n, c);
            }
            let mut out = Vec::new();
            let mut prev = usize::MAX;
            for &c in &path {
                if c != prev && c != b.blank {
                    out.push(c as i64);
                }
                prev = c;
            }
            if out == labels {
                total += logq.exp();
            }
        }
        total.ln()
    }

    fn block(t: usize, n: usize, c: usize, seed: u64) -> Vec<f64> {
        let mut x = seed;
        let mut v: Vec<f64> = (0..t * n * c)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 11) as f64 / (1u64 << 53) as f64 * 3.0
            })
            .collect();
        for row in v.chunks_mut(c) {
            let z = row.iter().map(|x| x.exp()).sum::<f64>().ln();
            row.iter_mut().for_each(|x| *x -= z);
        }
        v
    }

    #[test]
    fn forward_sums_every_alignment() {
        let b = Block {
            batch: 2,
            classes: 3,
            blank: 0,
        };
        let lp = block(5, 2, 3, 7);
        for (labels, frames) in [
            (&[1i64, 2][..], 5),
            (&[1, 1][..], 4),
            (&[][..], 3),
            (&[2][..], 1),
        ] {
            let samples = [
                Sample { labels, frames },
                Sample {
                    labels: &[2],
                    frames: 2,
                },
            ];
            let (_, logp) = forward(&lp, b, &samples);
            let want = brute(&lp, b, 0, labels, frames);
            assert!(
                (logp[0] - want).abs() < 1e-12,
                "{labels:?}: {} vs {want}",
                logp[0]
            );
        }
        // Two equal labels need a blank between them: impossible in 2 frames.
        let (_, logp) = forward(
            &lp,
            b,
            &[Sample {
                labels: &[1, 1],
                frames: 2,
            }],
        );
        assert_eq!(logp[0], f64::NEG_INFINITY);
    }

    #[test]
    fn backward_matches_finite_differences() {
        let b = Block {
            batch: 2,
            classes: 4,
            blank: 1,
        };
        let mut lp = block(6, 2, 4, 3);
        let labels: [&[i64]; 2] = [&[0, 2, 2], &[3]];
        let frames = [6, 4];
        let samples: Vec<_> = (0..2)
            .map(|n| Sample {
                labels: labels[n],
                frames: frames[n],
            })
            .collect();
        let (tables, logp) = forward(&lp, b, &samples);
        let scale = [1.5, -0.5];
        let g = backward(&lp, b, &samples, &tables, &logp, &scale);
        let f = |lp: &[f64]| {
            let (_, l) = forward(lp, b, &samples);
            scale[0] * l[0] + scale[1] * l[1]
        };
        for i in 0..lp.len() {
            let h = 1e-6;
            let x = lp[i];
            lp[i] = x + h;
            let up = f(&lp);
            lp[i] = x - h;
            let down = f(&lp);
            lp[i] = x;
            let fd = (up - down) / (2.0 * h);
            assert!((g[i] - fd).abs() < 1e-7, "element {i}: {} vs {fd}", g[i]);
        }
    }

    /// `ln(e^a + e^b + e^c)` with the C library's functions.
    fn lse3_libm(a: f64, b: f64, c: f64) -> f64 {
        let m = a.max(b).max(c);
        if m == f64::NEG_INFINITY {
            return m;
        }
        m + ((a - m).exp() + (b - m).exp() + (c - m).exp()).ln()
    }

    #[test]
    fn vector_log_sum_exp_is_the_same_on_every_path() {
        let vals = [
            0.0,
            -0.5,
            -3.25,
            -40.0,
            -700.0,
            -800.0,
            12.0,
            f64::NEG_INFINITY,
            f64::INFINITY,
            f64::NAN,
        ];
        let mut x = [Vec::new(), Vec::new(), Vec::new()];
        for &a in &vals {
            for &b in &vals {
                for &c in &vals {
                    x[0].push(a);
                    x[1].push(b);
                    x[2].push(c);
                }
            }
        }
        let n = x[0].len();
        let two: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
        let emit: Vec<f64> = (0..n).map(|i| -((i % 5) as f64) / 3.0).collect();
        let run = |isa| {
            let mut out = vec![0.0; n];
            lse_row_on(isa, &mut out, &x[0], &x[1], &x[2], &two, &emit);
            out
        };
        let want = run(Isa::Portable);
        for isa in [Isa::Avx2, Isa::Avx512] {
            let got = run(isa);
            assert!(
                got.iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "{isa:?}"
            );
        }
        for i in 0..n {
            let c = if two[i] { x[2][i] } else { f64::NEG_INFINITY };
            let libm = lse3_libm(x[0][i], x[1][i], c) + emit[i];
            let got = want[i];
            assert!(
                (got.is_nan() && libm.is_nan())
                    || got == libm
                    || (got - libm).abs() <= 1e-15 * libm.abs().max(1.0),
                "{} {} {c}: {got} vs {libm}",
                x[0][i],
                x[1][i]
            );
        }
    }

    #[test]
    fn a_sample_gives_the_same_bits_alone_and_in_a_batch() {
        // Enough samples and frames to go parallel on a pool of several threads.
        let (t, n, c) = (60, 6, 5);
        let b = Block {
            batch: n,
            classes: c,
            blank: 0,
        };
        let lp = block(t, n, c, 11);
        let labels: Vec<Vec<i64>> = (0..n)
            .map(|i| {
                (0..3 + 2 * i)
                    .map(|k| 1 + ((k * 3 + i) % 4) as i64)
                    .collect()
            })
            .collect();
        let samples: Vec<_> = (0..n)
            .map(|i| Sample {
                labels: &labels[i],
                frames: t - i,
            })
            .collect();
        let (tables, logp) = forward(&lp, b, &samples);
        let scale: Vec<f64> = (0..n).map(|i| 0.5 + i as f64).collect();
        let g = backward(&lp, b, &samples, &tables, &logp, &scale);
        let (starts, _) = table_starts(&samples);
        let one = Block { batch: 1, ..b };
        for i in 0..n {
            let column: Vec<f64> = (0..t)
                .flat_map(|f| lp[(f * n + i) * c..(f * n + i + 1) * c].to_vec())
                .collect();
            let alone = [Sample {
                labels: &labels[i],
                frames: t - i,
            }];
            let (tab, lg) = forward(&column, one, &alone);
            assert_eq!(lg[0].to_bits(), logp[i].to_bits());
            let len = alone[0].table_len();
            assert!(tab
                .iter()
                .zip(&tables[starts[i]..starts[i] + len])
                .all(|(a, b)| a.to_bits() == b.to_bits()));
            let gi = backward(&column, one, &alone, &tab, &lg, &scale[i..i + 1]);
            for f in 0..t {
                for k in 0..c {
                    assert_eq!(gi[f * c + k].to_bits(), g[(f * n + i) * c + k].to_bits());
                }
            }
        }
    }
}
