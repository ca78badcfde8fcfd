//! Connectionist temporal classification (Graves et al., 2006): the forward
//! (alpha) and backward (beta) recursions over a sample's extended label
//! sequence (a blank before, between and after the labels), in log space and
//! in float64 whatever the input's dtype, so long sequences neither underflow
//! nor lose the small path probabilities that a float32 sum would round away.
//!
//! `lp` is the whole `(T, N, C)` log-probability block, row-major; a sample is
//! column `n` of it. A sample's alpha table has one row per frame it uses
//! (its input length) and one column per extended position.

use rayon::prelude::*;

/// One sample of a batch: its labels (without blanks) and frame count.
pub(crate) struct Sample<'a> {
    pub labels: &'a [i64],
    pub frames: usize,
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

#[inline]
fn lse3(a: f64, b: f64, c: f64) -> f64 {
    let m = a.max(b).max(c);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + ((a - m).exp() + (b - m).exp() + (c - m).exp()).ln()
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
        return f64::NEG_INFINITY;
    }
    for (p, a) in alpha[..l].iter_mut().enumerate() {
        // A path starts on the first blank or the first label.
        *a = if p < 2 {
            b.at(lp, 0, n, ext[p])
        } else {
            f64::NEG_INFINITY
        };
    }
    for t in 1..s.frames {
        let (done, rest) = alpha.split_at_mut(t * l);
        let prev = &done[(t - 1) * l..];
        for (p, a) in rest[..l].iter_mut().enumerate() {
            let one = if p >= 1 {
                prev[p - 1]
            } else {
                f64::NEG_INFINITY
            };
            let two = if skip[p] {
                prev[p - 2]
            } else {
                f64::NEG_INFINITY
            };
            *a = lse3(prev[p], one, two) + b.at(lp, t, n, ext[p]);
        }
    }
    let last = &alpha[(s.frames - 1) * l..s.frames * l];
    let before = if l >= 2 {
        last[l - 2]
    } else {
        f64::NEG_INFINITY
    };
    lse3(last[l - 1], before, f64::NEG_INFINITY)
}

/// The alpha tables of a batch (`tables[n]` is sample `n`'s) and each
/// sample's log-probability.
pub(crate) fn forward(lp: &[f64], b: Block, samples: &[Sample<'_>]) -> (Vec<Vec<f64>>, Vec<f64>) {
    let run = |(n, s): (usize, &Sample<'_>)| {
        let mut alpha = vec![0.0; s.frames * (2 * s.labels.len() + 1)];
        let logp = alpha_of(lp, b, n, s, &mut alpha);
        (alpha, logp)
    };
    let work: usize = samples
        .iter()
        .map(|s| s.frames * (2 * s.labels.len() + 1))
        .sum();
    if work < super::GRAIN / 8 {
        samples.iter().enumerate().map(run).unzip()
    } else {
        samples.par_iter().enumerate().map(run).unzip()
    }
}

/// Adds `scale * d log p / d lp[t, n, c]` of sample `n` into its column of
/// `grad` (`(T, N, C)`, row-major), from its alpha table and log-probability:
/// the beta recursion runs backwards one frame at a time, and the paths
/// through each position at frame `t` (alpha + beta, counting that frame's
/// emission twice) are summed per class.
#[allow(clippy::too_many_arguments)]
fn grad_of(
    lp: &[f64],
    b: Block,
    n: usize,
    s: &Sample<'_>,
    alpha: &[f64],
    logp: f64,
    scale: f64,
    grad: &mut [f64],
) {
    let (ext, skip) = extended(s.labels, b.blank);
    let l = ext.len();
    // No alignment, no gradient (PyTorch's infinite loss has a zero one).
    if s.frames == 0 || logp == f64::NEG_INFINITY || scale == 0.0 {
        return;
    }
    let mut beta = vec![f64::NEG_INFINITY; l];
    let mut next = vec![f64::NEG_INFINITY; l];
    let last = s.frames - 1;
    for p in l.saturating_sub(2)..l {
        beta[p] = b.at(lp, last, n, ext[p]);
    }
    for t in (0..s.frames).rev() {
        if t < last {
            std::mem::swap(&mut beta, &mut next);
            for p in 0..l {
                let one = if p + 1 < l {
                    next[p + 1]
                } else {
                    f64::NEG_INFINITY
                };
                let two = if p + 2 < l && skip[p + 2] {
                    next[p + 2]
                } else {
                    f64::NEG_INFINITY
                };
                beta[p] = lse3(next[p], one, two) + b.at(lp, t, n, ext[p]);
            }
        }
        let row = &alpha[t * l..(t + 1) * l];
        let base = (t * b.batch + n) * b.classes;
        for p in 0..l {
            let c = ext[p];
            let w = row[p] + beta[p] - lp[base + c] - logp;
            // A NaN in the inputs reaches the gradient, as it reaches the loss.
            if w != f64::NEG_INFINITY {
                grad[base + c] += scale * w.exp();
            }
        }
    }
}

/// `sum_n scale[n] * d log p_n / d lp` over the batch, as a `(T, N, C)` block.
pub(crate) fn backward(
    lp: &[f64],
    b: Block,
    samples: &[Sample<'_>],
    tables: &[&[f64]],
    logp: &[f64],
    scale: &[f64],
) -> Vec<f64> {
    let mut grad = vec![0.0; lp.len()];
    // Each sample writes only its own column, so the samples could run side by
    // side; the columns interleave in memory, which makes that a scatter that
    // rarely pays at the sizes CTC sees. One pass per sample.
    for (n, s) in samples.iter().enumerate() {
        grad_of(lp, b, n, s, tables[n], logp[n], scale[n], &mut grad);
    }
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
        let views: Vec<&[f64]> = tables.iter().map(|t| &t[..]).collect();
        let g = backward(&lp, b, &samples, &views, &logp, &scale);
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
}
