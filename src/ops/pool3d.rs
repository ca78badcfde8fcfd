//! 3-d pooling, one call each: the 2-d kernels of `pool.rs` over the depth
//! slices (the depths folded into the planes), then over depth (each
//! volume's slice results as a `(D, H_out * W_out)` image under a `(kD, 1)`
//! window).
//!
//! Both give PyTorch's results: an average's divisor is the product of the
//! per-dimension window counts, so the depth pass divides by the last
//! factor; and the first maximum in PyTorch's (depth, row, column) scan is
//! the first maximal depth of the slices' first in-plane maxima. The maxima
//! record one node (`MaxPool3DWithIndicesBackward0`,
//! `AdaptiveMaxPool3DBackward0`) whose rule sends each gradient to its
//! maximum in the volume; the averages are the two recorded 2-d averages
//! and the reshapes between them.
//!
//! Python keeps PyTorch's argument checks; these take a 5-d input.

use super::pool::{
    adaptive_sizes, adaptive_window, empty_output, max_backward, max_window, pool_params,
    pooled_len,
};
use super::{adaptive_avg_pool2d, avg_pool2d, contiguous, expand, narrow, reshape};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::max_pool::{self as kp, Window};
use crate::saved;
use crate::tensor::{fmt_shape, DType, Shape, Tensor};
use smallvec::smallvec;

fn dims5(x: &Tensor, op: &str) -> Result<[usize; 5]> {
    match x.shape().as_slice() {
        &[n, c, d, h, w] => Ok([n, c, d, h, w]),
        s => Err(Error::runtime(format!(
            "{op}: expected a 5-d input, but got: {}",
            fmt_shape(s)
        ))),
    }
}

/// Every output position of a `len`-wide axis on its own (the columns of
/// the depth pass).
fn unit_window(len: usize) -> Window {
    Window {
        len_in: len,
        start: (0..len).collect(),
        count: vec![1; len],
        step: 1,
    }
}

/// The empty values and indices of a max pooling with no output element,
/// answered before any per-axis table (as long as an output side, which may
/// be huge beside an empty batch) is built.
fn empty_or_none(x: &Tensor, oshape: Shape, name: &'static str) -> Option<(Tensor, Tensor)> {
    let empty = empty_output(x, oshape, name)?;
    let idx = Tensor::zeros(empty.shape(), DType::I64);
    Some((empty, idx))
}

/// Max pooling of `x` (`n * c` volumes of `d` slices of `h x w`) through the
/// in-plane windows `wh`, `ww` and the depth window `wd`: the values and the
/// flat in-volume index of each maximum, recorded as `name`.
fn max3(
    x: &Tensor,
    [n, c, d, h, w]: [usize; 5],
    [wd, wh, ww]: [Window; 3],
    name: &'static str,
) -> Result<(Tensor, Tensor)> {
    let (od, oh, ow) = (wd.len_out(), wh.len_out(), ww.len_out());
    let oshape: Shape = smallvec![n, c, od, oh, ow];
    let hw_out = oh * ow;
    let unit = unit_window(hw_out);
    let (out, idx) = {
        // float16/bfloat16 in float32: a maximum is exact in either.
        let xc = super::compute_contig(x);
        let v = xc.view();
        let (o, i) = crate::dispatch_float!(xc.dtype(), T => {
            let xs = v.as_slice::<T>().unwrap_or(&[]);
            let (slices, at_slice) = kp::max_pool::<T>(xs, n * c * d, &wh, &ww, true);
            // `at[q]`: depth * hw_out + column of the depth pass's image.
            let (o, at) = kp::max_pool::<T>(&slices, n * c, &wd, &unit, true);
            let mut idx = crate::error::alloc_vec::<i64>(at.len());
            let per = od * hw_out;
            for (q, &a) in at.iter().enumerate() {
                let vol = q / per;
                let a = a as usize;
                let depth = a / hw_out;
                let in_plane = at_slice[vol * d * hw_out + a];
                idx.push((depth * h * w) as i64 + in_plane);
            }
            (Tensor::from_vec(o, oshape.clone()), Tensor::from_vec(idx, oshape.clone()))
        });
        (super::back_to(o, x.dtype()), i)
    };
    if needs_record(&[x]) {
        let shape = x.shape();
        record(name, &[x], &out, saved![&idx], move |c| {
            let (g, idx) = (c.grad()?, c.saved(0)?);
            Ok(smallvec![Some(max_backward(g, idx, &shape, 3)?)])
        });
    }
    Ok((out, idx))
}

/// `max_pool3d_with_indices` of a 5-d input (`MaxPool3DWithIndicesBackward0`).
pub fn max_pool3d_with_indices(
    x: &Tensor,
    kernel: [i64; 3],
    stride: [i64; 3],
    padding: [i64; 3],
    dilation: [i64; 3],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    let [n, c, d, h, w] = dims5(x, "max_pool3d")?;
    let dt = x.dtype();
    // The checks and sizes of the two 2-d passes, in their order.
    let pp = pool_params(
        &smallvec![n, c * d, h, w],
        dt,
        "max_pool2d",
        &kernel[1..],
        &stride[1..],
        &padding[1..],
        &dilation[1..],
        ceil_mode,
        true,
    )?;
    let od = if n == 0 {
        // An empty batch: no depth pass to check.
        pooled_len(
            d as i64,
            kernel[0],
            padding[0],
            stride[0],
            dilation[0],
            ceil_mode,
        )
    } else {
        let hw_out = (pp.out[0] * pp.out[1]) as usize;
        pool_params(
            &smallvec![n, c, d, hw_out],
            dt,
            "max_pool2d",
            &[kernel[0], 1],
            &[stride[0], 1],
            &[padding[0], 0],
            &[dilation[0], 1],
            ceil_mode,
            true,
        )?
        .out[0]
    };
    if od < 1 {
        return Err(Error::runtime(format!(
            "Given input size: ({c}x{d}x{h}x{w}). Calculated output size is too small"
        )));
    }
    let name = "MaxPool3DWithIndicesBackward0";
    let oshape: Shape = smallvec![n, c, od as usize, pp.out[0] as usize, pp.out[1] as usize];
    if let Some(empty) = empty_or_none(x, oshape, name) {
        return Ok(empty);
    }
    let [wh, ww]: [Window; 2] = std::array::from_fn(|a| {
        max_window(
            pp.size[a] as i64,
            [pp.k[a], pp.s[a], pp.p[a], pp.d[a]],
            pp.out[a],
        )
    });
    let wd = max_window(
        d as i64,
        [kernel[0], stride[0], padding[0], dilation[0]],
        od,
    );
    max3(x, [n, c, d, h, w], [wd, wh, ww], name)
}

/// `adaptive_max_pool3d` with indices, of a 5-d input to `output_size`
/// (`AdaptiveMaxPool3DBackward0`).
pub fn adaptive_max_pool3d(x: &Tensor, output_size: [i64; 3]) -> Result<(Tensor, Tensor)> {
    let [n, c, d, h, w] = dims5(x, "adaptive_max_pool3d")?;
    let op = "adaptive_max_pool2d";
    let (_, [oh, ow]) =
        adaptive_sizes(&smallvec![n, c * d, h, w], x.dtype(), op, &output_size[1..])?;
    // The depth pass's checks, on its image of the slices' maxima.
    let hw_out = oh * ow;
    let (_, [od, _]) = adaptive_sizes(
        &smallvec![n * c, 1, d, hw_out],
        x.dtype(),
        op,
        &[output_size[0], hw_out as i64],
    )?;
    let name = "AdaptiveMaxPool3DBackward0";
    if let Some(empty) = empty_or_none(x, smallvec![n, c, od, oh, ow], name) {
        return Ok(empty);
    }
    max3(
        x,
        [n, c, d, h, w],
        [
            adaptive_window(d, od),
            adaptive_window(h, oh),
            adaptive_window(w, ow),
        ],
        name,
    )
}

/// `avg_pool3d` of a 5-d input: the in-plane averages (sums, under a
/// divisor override) of each slice, then the depth windows' averages of
/// those (divided by the override).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool3d(
    x: &Tensor,
    kernel: [i64; 3],
    stride: [i64; 3],
    padding: [i64; 3],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    let [n, c, d, h, w] = dims5(x, "avg_pool3d")?;
    let od = pooled_len(d as i64, kernel[0], padding[0], stride[0], 1, ceil_mode);
    if od < 1 {
        return Err(Error::runtime(format!(
            "Given input size: ({c}x{d}x{h}x{w}). Calculated output size is too small"
        )));
    }
    let planes = avg_pool2d(
        &reshape(x, &[n, c * d, h, w])?,
        &kernel[1..],
        &stride[1..],
        &padding[1..],
        ceil_mode,
        count_include_pad,
        divisor_override.map(|_| 1),
    )?;
    let ps = planes.shape();
    let (oh, ow) = (ps[2], ps[3]);
    let od = od as usize;
    if n == 0 {
        // An empty batch, however deep: no loop over its output depths.
        let planes = reshape(&planes, &[n, c, d, oh, ow])?;
        return contiguous(&expand(&narrow(&planes, 2, 0, 1)?, &[n, c, od, oh, ow])?);
    }
    let out = avg_pool2d(
        &reshape(&planes, &[n, c, d, oh * ow])?,
        &[kernel[0], 1],
        &[stride[0], 1],
        &[padding[0], 0],
        ceil_mode,
        count_include_pad,
        divisor_override,
    )?;
    reshape(&out, &[n, c, od, oh, ow])
}

/// `adaptive_avg_pool3d` of a 5-d input: each slice's in-plane bins, then
/// the depth bins of those.
pub fn adaptive_avg_pool3d(x: &Tensor, output_size: [i64; 3]) -> Result<Tensor> {
    let [n, c, d, h, w] = dims5(x, "adaptive_avg_pool3d")?;
    let planes = adaptive_avg_pool2d(&reshape(x, &[n, c * d, h, w])?, &output_size[1..])?;
    let ps = planes.shape();
    let (oh, ow) = (ps[2], ps[3]);
    let out = adaptive_avg_pool2d(
        &reshape(&planes, &[n * c, 1, d, oh * ow])?,
        &[output_size[0], (oh * ow) as i64],
    )?;
    let od = out.shape()[2];
    reshape(&out, &[n, c, od, oh, ow])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(shape: [usize; 5]) -> Tensor {
        let n: usize = shape.iter().product();
        // Distinct values in a scrambled order, so every maximum is unique.
        let v: Vec<f64> = (0..n).map(|i| ((i * 37 + 11) % 101) as f64).collect();
        Tensor::from_vec(v, Shape::from_slice(&shape))
    }

    /// The maximum and its flat index over the window `(d0.., h0.., w0..)`
    /// of volume `vol`, scanning depth, row, column (PyTorch's order).
    fn brute(x: &[f64], dims: [usize; 5], vol: usize, ranges: [Vec<usize>; 3]) -> (f64, i64) {
        let [_, _, d, h, w] = dims;
        let base = vol * d * h * w;
        let (mut best, mut at) = (f64::NEG_INFINITY, -1i64);
        for &i in &ranges[0] {
            for &j in &ranges[1] {
                for &k in &ranges[2] {
                    let pos = i * h * w + j * w + k;
                    if x[base + pos] > best {
                        best = x[base + pos];
                        at = pos as i64;
                    }
                }
            }
        }
        (best, at)
    }

    #[test]
    fn max_pool3d_matches_a_direct_scan() {
        let dims = [2, 3, 5, 4, 6];
        let x = input(dims);
        let xs = x
            .contiguous_data()
            .view()
            .as_slice::<f64>()
            .unwrap()
            .to_vec();
        let (k, s, p, dl) = ([2, 3, 2], [2, 1, 2], [1, 1, 0], [2, 1, 2]);
        let (v, i) = max_pool3d_with_indices(&x, k, s, p, dl, true).unwrap();
        let vs = v
            .contiguous_data()
            .view()
            .as_slice::<f64>()
            .unwrap()
            .to_vec();
        let is = i
            .contiguous_data()
            .view()
            .as_slice::<i64>()
            .unwrap()
            .to_vec();
        let os = v.shape();
        let (od, oh, ow) = (os[2], os[3], os[4]);
        let taps = |o: usize, a: usize, len: usize| -> Vec<usize> {
            (0..k[a] as usize)
                .map(|t| (o * s[a] as usize + t * dl[a] as usize) as i64 - p[a])
                .filter(|&q| q >= 0 && (q as usize) < len)
                .map(|q| q as usize)
                .collect()
        };
        for vol in 0..dims[0] * dims[1] {
            for a in 0..od {
                for b in 0..oh {
                    for c in 0..ow {
                        let ranges = [
                            taps(a, 0, dims[2]),
                            taps(b, 1, dims[3]),
                            taps(c, 2, dims[4]),
                        ];
                        let (best, at) = brute(&xs, dims, vol, ranges);
                        let q = ((vol * od + a) * oh + b) * ow + c;
                        assert_eq!((vs[q], is[q]), (best, at), "at {vol} {a} {b} {c}");
                    }
                }
            }
        }
    }

    #[test]
    fn adaptive_max_pool3d_matches_a_direct_scan() {
        let dims = [1, 2, 5, 7, 3];
        let x = input(dims);
        let xs = x
            .contiguous_data()
            .view()
            .as_slice::<f64>()
            .unwrap()
            .to_vec();
        let out = [3, 2, 2];
        let (v, i) = adaptive_max_pool3d(&x, out).unwrap();
        let vs = v
            .contiguous_data()
            .view()
            .as_slice::<f64>()
            .unwrap()
            .to_vec();
        let is = i
            .contiguous_data()
            .view()
            .as_slice::<i64>()
            .unwrap()
            .to_vec();
        let bin = |o: usize, len: usize, n: usize| -> Vec<usize> {
            (o * len / n..((o + 1) * len).div_ceil(n)).collect()
        };
        for vol in 0..2 {
            for a in 0..3 {
                for b in 0..2 {
                    for c in 0..2 {
                        let ranges = [bin(a, 5, 3), bin(b, 7, 2), bin(c, 3, 2)];
                        let (best, at) = brute(&xs, dims, vol, ranges);
                        let q = ((vol * 3 + a) * 2 + b) * 2 + c;
                        assert_eq!((vs[q], is[q]), (best, at));
                    }
                }
            }
        }
    }

    #[test]
    fn an_empty_batch_gives_an_empty_result() {
        let x = Tensor::zeros(Shape::from_slice(&[0, 2, 3, 4, 4]), DType::F32);
        let (v, i) =
            max_pool3d_with_indices(&x, [2, 2, 2], [2, 2, 2], [0; 3], [1; 3], false).unwrap();
        assert_eq!(v.shape().as_slice(), &[0, 2, 1, 2, 2]);
        assert_eq!(i.dtype(), DType::I64);
        let a = avg_pool3d(&x, [2, 2, 2], [2, 2, 2], [0; 3], false, true, None).unwrap();
        assert_eq!(a.shape().as_slice(), &[0, 2, 1, 2, 2]);
    }

    #[test]
    fn an_empty_batch_beside_huge_sides_builds_no_tables() {
        // A window table per output position would take 2^40 steps here.
        let big = 1usize << 40;
        for shape in [[0, 2, big, 4, 4], [0, 1, 4, big, big], [0, 3, big, 2, big]] {
            let x = Tensor::zeros(Shape::from_slice(&shape), DType::F32);
            let (v, i) =
                max_pool3d_with_indices(&x, [2, 2, 2], [2, 2, 2], [0; 3], [1; 3], false).unwrap();
            let want = [shape[0], shape[1], shape[2] / 2, shape[3] / 2, shape[4] / 2];
            assert_eq!(v.shape().as_slice(), &want);
            assert_eq!(i.shape().as_slice(), &want);
            let (v, _) = adaptive_max_pool3d(&x, [3, 1, 2]).unwrap();
            assert_eq!(v.shape().as_slice(), &[shape[0], shape[1], 3, 1, 2]);
            let a = avg_pool3d(&x, [2, 2, 2], [2, 2, 2], [0; 3], false, true, None).unwrap();
            assert_eq!(a.shape().as_slice(), &want);
        }
        // No channels is an error (as in PyTorch), found before any table.
        let x = Tensor::zeros(Shape::from_slice(&[1, 0, big, 4, 4]), DType::F32);
        assert!(max_pool3d_with_indices(&x, [2; 3], [2; 3], [0; 3], [1; 3], false).is_err());
        assert!(avg_pool3d(&x, [2; 3], [2; 3], [0; 3], false, true, None).is_err());
    }
}
