//! `bmm`: strictly 3-D batches of equal size (`BmmBackward0`).

use smallvec::smallvec;

use super::gemm::{check_dtype, product};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::ops::transpose;
use crate::saved;
use crate::tensor::{Shape, Tensor};

/// `bmm(a, b)`: strictly 3-D batches of equal size.
pub(crate) fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 3 {
        return Err(Error::runtime("batch1 must be a 3D tensor"));
    }
    if sb.len() != 3 {
        return Err(Error::runtime("batch2 must be a 3D tensor"));
    }
    if sb[0] != sa[0] || sb[1] != sa[2] {
        return Err(Error::runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            sa[0], sa[2], sb[0], sb[1]
        )));
    }
    let dt = check_dtype(a, b, "bmm")?;
    let out = {
        let (va, vb) = (a.view(), b.view());
        product(dt, &va, &vb, Shape::from_slice(&[sa[0], sa[1], sb[2]]))?
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (crate::autograd::tracked(a), crate::autograd::tracked(b));
        record(
            "BmmBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), ra.then_some(b)],
            |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) {
                    Some(bmm(g, &transpose(c.saved(1)?, 1, 2)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(bmm(&transpose(c.saved(0)?, 1, 2)?, g)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}
