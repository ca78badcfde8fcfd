//! `conv3d` on the 2-d convolution, in one call: for depth tap `i` the input
//! depths `o * stride + i * dilation` of every output depth `o` are folded
//! into the batch; the taps' slices are laid side by side as channels (a
//! window view over the depth) and convolved once with the weight's taps
//! laid out likewise, so the GEMM sums over the taps. Every step is a
//! recorded op, so gradients of every order follow.
//!
//! The Python layer (`nn/_functional/conv.py`) checks PyTorch's arguments
//! and pads the depth (and an odd `'same'` padding) before calling it.

use super::{add, contiguous, convolution, index_select, permute, reshape, unfold_windows};
use crate::error::{Error, Result};
use crate::tensor::{fmt_shape, Shape, Tensor};

/// `conv3d` of a 5-d input whose depth is already padded: `padding` is the
/// in-plane padding.
#[allow(clippy::too_many_arguments)]
pub fn conv3d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: [i64; 3],
    padding: [i64; 2],
    dilation: [i64; 3],
    groups: i64,
) -> Result<Tensor> {
    let (xs, ws) = (input.shape(), weight.shape());
    let (&[n, c, d, h, w], &[out_ch, cg, kd, kh, kw]) = (xs.as_slice(), ws.as_slice()) else {
        return Err(Error::runtime(format!(
            "conv3d: expected 5-d input and weight, but got {} and {}",
            fmt_shape(&xs),
            fmt_shape(&ws)
        )));
    };
    let g = groups.max(1) as usize;
    if c != cg * g || kd == 0 || stride[0] < 1 || dilation[0] < 1 {
        return Err(Error::runtime(
            "conv3d: the channels, stride or dilation do not match",
        ));
    }
    let (s0, d0) = (stride[0] as usize, dilation[0] as usize);
    let span = d0 * (kd - 1) + 1;
    if d < span {
        return Err(Error::runtime(
            "conv3d: the kernel is deeper than the input",
        ));
    }
    let depth_out = (d - span) / s0 + 1;
    let mut taps = unfold_windows(input, 2, span as i64, s0 as i64)?; // (N, C, Do, H, W, span)
    if d0 > 1 {
        let at: Vec<i64> = (0..span as i64).step_by(d0).collect();
        let at = Tensor::from_vec(at, Shape::from_slice(&[kd]));
        taps = index_select(&taps, 5, &at)?;
    }
    let taps = permute(
        &reshape(&taps, &[n, g, cg, depth_out, h, w, kd])?,
        &[0, 3, 1, 6, 2, 4, 5],
    )?;
    let planes = reshape(&taps, &[n * depth_out, g * kd * cg, h, w])?;
    let w2 = reshape(
        &permute(weight, &[0, 2, 1, 3, 4])?,
        &[out_ch, kd * cg, kh, kw],
    )?;
    let out = convolution(
        &planes,
        &w2,
        None,
        &stride[1..],
        &padding,
        &dilation[1..],
        false,
        &[0, 0],
        groups,
    )?;
    let os = out.shape();
    let (ho, wo) = (os[2], os[3]);
    let out = permute(
        &reshape(&out, &[n, depth_out, out_ch, ho, wo])?,
        &[0, 2, 1, 3, 4],
    )?;
    let out = match bias {
        Some(b) => add(&out, &reshape(b, &[1, out_ch, 1, 1, 1])?)?,
        None => out,
    };
    contiguous(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(t: &Tensor) -> Vec<f64> {
        let c = t.contiguous_data();
        let v = c.view();
        v.as_slice::<f64>().unwrap().to_vec()
    }

    #[test]
    fn conv3d_matches_a_direct_sum() {
        let (n, c, d, h, w) = (2, 2, 5, 4, 3);
        let (o, kd, kh, kw) = (3, 2, 2, 2);
        let xv: Vec<f64> = (0..n * c * d * h * w)
            .map(|i| ((i * 13 + 5) % 17) as f64 - 8.0)
            .collect();
        let wv: Vec<f64> = (0..o * c * kd * kh * kw)
            .map(|i| ((i * 7 + 2) % 11) as f64 - 5.0)
            .collect();
        let bv = vec![0.5, -1.0, 2.0];
        let x = Tensor::from_vec(xv.clone(), Shape::from_slice(&[n, c, d, h, w]));
        let wt = Tensor::from_vec(wv.clone(), Shape::from_slice(&[o, c, kd, kh, kw]));
        let b = Tensor::from_vec(bv.clone(), Shape::from_slice(&[o]));
        // Depth stride 1 and dilation 2, in-plane stride 1, padding 1, dilation 1.
        let out = conv3d(&x, &wt, Some(&b), [1, 1, 1], [1, 1], [2, 1, 1], 1).unwrap();
        let os = out.shape();
        let (od, oh, ow) = (os[2], os[3], os[4]);
        assert_eq!((od, oh, ow), (3, 5, 4));
        let got = values(&out);
        for bi in 0..n {
            for (oc, &bias) in bv.iter().enumerate() {
                for z in 0..od {
                    for y in 0..oh {
                        for xo in 0..ow {
                            let mut acc = bias;
                            for ci in 0..c {
                                for a in 0..kd {
                                    for p in 0..kh {
                                        for q in 0..kw {
                                            let (iz, iy, ix) = (z + 2 * a, y + p, xo + q);
                                            if iy < 1 || ix < 1 || iy > h || ix > w {
                                                continue;
                                            }
                                            let xi = (((bi * c + ci) * d + iz) * h + iy - 1) * w
                                                + ix
                                                - 1;
                                            let wi = (((oc * c + ci) * kd + a) * kh + p) * kw + q;
                                            acc += xv[xi] * wv[wi];
                                        }
                                    }
                                }
                            }
                            let at = (((bi * o + oc) * od + z) * oh + y) * ow + xo;
                            assert!((got[at] - acc).abs() < 1e-9, "{bi} {oc} {z} {y} {xo}");
                        }
                    }
                }
            }
        }
    }
}
