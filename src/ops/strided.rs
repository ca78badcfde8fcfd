//! Arbitrary strided regions of a tensor's (row-major) index space, as
//! differentiable ops: `as_strided_region` (a view), its adjoint
//! `embed_region` (zeros with a region filled in) and `zero_region` (a copy
//! with a region cleared). They are what in-place writes into views record:
//! the `CopySlices` node on the base and `AsStridedBackward0` on the view.

use std::sync::Arc;

use smallvec::smallvec;

use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::copy::scatter;
use crate::saved;
use crate::tensor::{contiguous_strides, Element, Shape, Strides, Tensor, View};

/// A region of a tensor's elements, in the index space of that tensor laid
/// out contiguously (row-major): element `i` of the region is at linear index
/// `offset + sum(i_k * strides[k])`. Only a region read from (the view of
/// an expanded tensor) may overlap itself; a written one never does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub shape: Shape,
    pub strides: Strides,
    pub offset: usize,
}

impl Region {
    /// The region as a view of the contiguous view `v`.
    fn on(&self, v: &View) -> View {
        debug_assert!(v.is_contiguous());
        View {
            storage: v.storage.clone(),
            shape: self.shape.clone(),
            strides: self.strides.clone(),
            offset: v.offset + self.offset,
        }
    }

    /// Whether the region fits in a tensor with `numel` elements.
    fn fits(&self, numel: usize) -> bool {
        if self.shape.contains(&0) {
            return self.offset <= numel;
        }
        let last = self
            .shape
            .iter()
            .zip(&self.strides)
            .try_fold(self.offset, |acc, (&n, &s)| {
                acc.checked_add((n - 1).checked_mul(s)?)
            });
        matches!(last, Some(l) if l < numel)
    }
}

const OVERLAP_MSG: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";

/// Whether distinct indices of `(shape, strides)` always address distinct
/// memory (sufficient check, as PyTorch's: sorted strides each exceed the
/// span of the smaller ones).
pub(crate) fn non_overlapping(shape: &[usize], strides: &[usize]) -> bool {
    let mut dims: Vec<(usize, usize)> = shape
        .iter()
        .zip(strides)
        .filter(|(&n, _)| n > 1)
        .map(|(&n, &s)| (s, n))
        .collect();
    if shape.contains(&0) {
        return true;
    }
    dims.sort_unstable();
    let mut span = 0usize; // largest offset reachable by the smaller dims
    for (s, n) in dims {
        if s <= span {
            return false;
        }
        span = span.saturating_add((n - 1).saturating_mul(s));
    }
    true
}

/// Calls `f` with the storage offset of every element of `(shape, strides, offset)`.
fn for_each_offset(
    shape: &[usize],
    strides: &[usize],
    offset: usize,
    mut f: impl FnMut(usize) -> bool,
) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let nd = shape.len();
    let mut idx = vec![0usize; nd];
    let mut off = offset;
    loop {
        if !f(off) {
            return false;
        }
        let mut d = nd;
        loop {
            if d == 0 {
                return true;
            }
            d -= 1;
            idx[d] += 1;
            off += strides[d];
            if idx[d] < shape[d] {
                break;
            }
            off -= strides[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// Where view `v` lies in `base`'s index space: the region of `base` (laid
/// out row-major) that `v` shows, to be written into. An error if `v`
/// overlaps itself or does not map onto `base`'s elements as a strided region.
pub(crate) fn region_of(base: &View, v: &View) -> Result<Region> {
    if !non_overlapping(&v.shape, &v.strides) {
        return Err(Error::runtime(OVERLAP_MSG));
    }
    read_region_of(base, v)
}

/// `region_of` for a view that is only read, which may overlap itself
/// (stride 0 from `expand`).
pub(crate) fn read_region_of(base: &View, v: &View) -> Result<Region> {
    let unsupported = || {
        Error::runtime(
            "in-place operations on this view of a tensor that requires grad are not supported (the view is not a strided region of its base); use an out-of-place op",
        )
    };
    // An empty view holds no element, so it is a region of any base; where
    // its offset points (past the end of an empty base, say) does not matter.
    if v.shape.contains(&0) {
        return Ok(Region {
            shape: v.shape.clone(),
            strides: contiguous_strides(&v.shape),
            offset: 0,
        });
    }
    let numel = base.numel();
    if base.is_contiguous() {
        let offset = v.offset.checked_sub(base.offset).ok_or_else(unsupported)?;
        let r = Region {
            shape: v.shape.clone(),
            strides: v
                .shape
                .iter()
                .zip(&v.strides)
                .map(|(&n, &s)| if n > 1 { s } else { 1 })
                .collect(),
            offset,
        };
        return if r.fits(numel) {
            Ok(r)
        } else {
            Err(unsupported())
        };
    }
    // A non-contiguous base: map storage offsets to the base's linear indices.
    if !non_overlapping(&base.shape, &base.strides) {
        return Err(unsupported());
    }
    let cst = contiguous_strides(&base.shape);
    let mut dims: Vec<usize> = (0..base.shape.len())
        .filter(|&d| base.shape[d] > 1)
        .collect();
    dims.sort_unstable_by(|&a, &b| base.strides[b].cmp(&base.strides[a]));
    let linear = |s: usize| -> Option<usize> {
        let mut rem = s.checked_sub(base.offset)?;
        let mut lin = 0;
        for &d in &dims {
            let i = rem / base.strides[d];
            if i >= base.shape[d] {
                return None;
            }
            rem -= i * base.strides[d];
            lin += i * cst[d];
        }
        (rem == 0).then_some(lin)
    };
    let offset = linear(v.offset).ok_or_else(unsupported)?;
    let mut strides = Strides::new();
    for (&n, &s) in v.shape.iter().zip(&v.strides) {
        if n > 1 {
            let l = linear(v.offset + s).ok_or_else(unsupported)?;
            strides.push(l.checked_sub(offset).ok_or_else(unsupported)?);
        } else {
            strides.push(1);
        }
    }
    let r = Region {
        shape: v.shape.clone(),
        strides,
        offset,
    };
    // Check the guess on every element.
    let mut expected = Vec::with_capacity(v.numel());
    for_each_offset(&r.shape, &r.strides, r.offset, |l| {
        expected.push(l);
        true
    });
    let mut i = 0;
    let ok = for_each_offset(&v.shape, &v.strides, v.offset, |s| {
        let good = linear(s) == Some(expected[i]);
        i += 1;
        good
    });
    if ok && r.fits(numel) {
        Ok(r)
    } else {
        Err(unsupported())
    }
}

/// Writes `src` (contiguous after conversion) into `region` of the contiguous `dst`.
fn write_region(dst: &Tensor, region: &Region, src: &Tensor) {
    let src = src.contiguous_data();
    let sv = src.view();
    let dv = dst.view();
    let target = region.on(&dv);
    crate::dispatch!(dv.dtype(), T => {
        if let Some(s) = sv.as_slice::<T>() {
            scatter::<T>(&target, s);
        }
    });
}

/// Adds `src` into `region` of the contiguous `dst`, element by element, so
/// that locations the region reaches several times receive every value.
fn add_into_region(dst: &Tensor, region: &Region, src: &Tensor) {
    let src = src.contiguous_data();
    let sv = src.view();
    let dv = dst.view();
    crate::dispatch!(dv.dtype(), T => {
        if let Some(s) = sv.as_slice::<T>() {
            let base = dv.ptr::<T>();
            let mut i = 0;
            for_each_offset(&region.shape, &region.strides, region.offset, |off| {
                // SAFETY: `region.fits(dst.numel())` was checked by the caller
                // and `dst` is contiguous, so `off` is inside its memory; `s`
                // has one value per element of the region.
                unsafe {
                    let p = base.add(off);
                    *p = T::from_f64((*p).to_f64() + s[i].to_f64());
                }
                i += 1;
                true
            });
        }
    });
}

/// `a` viewed through `region` of its row-major index space (`a` is made
/// contiguous first, recorded). The backward embeds the gradient into zeros.
pub(crate) fn as_strided_region(
    a: &Tensor,
    region: &Arc<Region>,
    name: &'static str,
) -> Result<Tensor> {
    let c = super::contiguous(a)?;
    let in_shape = c.shape();
    if !region.fits(c.numel()) {
        return Err(Error::runtime("as_strided: region out of bounds"));
    }
    let view = region.on(&c.view());
    crate::ops::inplace::install_view_refresh();
    let out = Tensor::new_view(view, &c, name);
    if needs_record(&[&c]) {
        let region = region.clone();
        record(name, &[&c], &out, saved![], move |ctx| {
            Ok(smallvec![Some(embed_region(
                ctx.grad()?,
                &in_shape,
                &region
            )?)])
        });
    }
    Ok(out)
}

/// Zeros of `shape` with `g` written into `region`: the adjoint of
/// `as_strided_region`. Where the region overlaps itself, the gradients of
/// the elements that read one location add up there.
pub(crate) fn embed_region(g: &Tensor, shape: &Shape, region: &Arc<Region>) -> Result<Tensor> {
    let z = Tensor::zeros(shape.clone(), g.dtype());
    if g.shape() != region.shape || !region.fits(z.numel()) {
        return Err(Error::runtime(
            "as_strided backward: gradient does not match the region",
        ));
    }
    if non_overlapping(&region.shape, &region.strides) {
        write_region(&z, region, g);
    } else {
        add_into_region(&z, region, g);
    }
    if needs_record(&[g]) {
        let region = region.clone();
        record(
            "AsStridedScatterBackward0",
            &[g],
            &z,
            saved![],
            move |ctx| {
                Ok(smallvec![Some(as_strided_region(
                    ctx.grad()?,
                    &region,
                    "AsStridedBackward0"
                )?)])
            },
        );
    }
    Ok(z)
}

/// A copy of `g` with `region` set to zero (linear and self-adjoint).
pub(crate) fn zero_region(g: &Tensor, region: &Arc<Region>) -> Result<Tensor> {
    let out = super::clone_data(g);
    if !region.fits(out.numel()) {
        return Err(Error::runtime("CopySlices backward: region out of bounds"));
    }
    {
        let ov = out.view();
        let target = region.on(&ov);
        crate::dispatch!(ov.dtype(), T => scatter::<T>(&target, &[T::from_f64(0.0)]));
    }
    if needs_record(&[g]) {
        let region = region.clone();
        record("ZeroRegionBackward0", &[g], &out, saved![], move |ctx| {
            Ok(smallvec![Some(zero_region(ctx.grad()?, &region)?)])
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::Storage;

    #[test]
    fn overlap_check() {
        assert!(non_overlapping(&[2, 3], &[3, 1]));
        assert!(non_overlapping(&[3, 2], &[1, 3]));
        assert!(!non_overlapping(&[2, 3], &[0, 1]));
        assert!(!non_overlapping(&[2, 3], &[2, 1]));
        assert!(non_overlapping(&[1, 3], &[0, 1]));
    }

    #[test]
    fn region_of_transposed_base() {
        // base: shape [3, 2] with strides [1, 3] over 6 elements (a transposed layout).
        let storage = Storage::from_vec(vec![0f64; 6]);
        let base = View {
            storage: storage.clone(),
            shape: smallvec![3, 2],
            strides: smallvec![1, 3],
            offset: 0,
        };
        // base[:, 1] is storage offsets 3, 4, 5 = base linear indices 1, 3, 5.
        let v = View {
            storage,
            shape: smallvec![3],
            strides: smallvec![1],
            offset: 3,
        };
        let r = region_of(&base, &v).unwrap();
        assert_eq!(r.offset, 1);
        assert_eq!(r.strides.as_slice(), &[2]);
    }
}
