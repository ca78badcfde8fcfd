//! Shapes, strides and NumPy-style broadcasting.

use smallvec::SmallVec;

use crate::error::{Error, Result};

/// Dimensions of a tensor; four fit inline, so the common cases never allocate.
pub type Shape = SmallVec<[usize; 4]>;
/// Element strides (not bytes). Broadcast dimensions have stride 0.
pub type Strides = SmallVec<[usize; 4]>;

pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The element count of a shape built from user-supplied sizes, refused when
/// it does not fit in an `i64` (PyTorch's limit). An empty shape is fine
/// whatever its other sizes: nothing is ever counted or read.
pub fn checked_numel(shape: &[usize]) -> Result<usize> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1usize, |acc, &d| {
            acc.checked_mul(d).filter(|&n| n <= i64::MAX as usize)
        })
        .ok_or_else(|| Error::runtime("numel: integer multiplication overflow"))
}

/// The element count of a shape about to be allocated with `itemsize`-byte
/// elements, refused when the byte size does not fit in an `i64` or a
/// contiguous stride would not (PyTorch's checks: a size that overflows before
/// a zero is reached counts, so `[2**40, 2**40, 0]` is refused while
/// `[2**62, 0]` is an ordinary empty tensor).
pub fn checked_storage_numel(shape: &[usize], itemsize: usize) -> Result<usize> {
    let n = shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|n| {
            n.checked_mul(itemsize)
                .is_some_and(|b| b <= i64::MAX as usize)
        })
        .ok_or_else(|| {
            Error::runtime(format!(
                "Storage size calculation overflowed with sizes={}",
                fmt_shape(shape)
            ))
        })?;
    checked_contiguous_strides(shape)?;
    Ok(n)
}

/// [`contiguous_strides`], refused when a stride does not fit in an `i64`
/// (an empty tensor's leading stride is the product of the other sizes:
/// `[0, 2**62, 2**62]` has none that fits).
pub fn checked_contiguous_strides(shape: &[usize]) -> Result<Strides> {
    let mut strides: Strides = SmallVec::from_elem(0, shape.len());
    let mut acc = 1usize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc = acc
            .checked_mul(shape[i].max(1))
            .filter(|&a| a <= i64::MAX as usize || i == 0)
            .ok_or_else(|| Error::runtime("Stride calculation overflowed"))?;
    }
    Ok(strides)
}

/// Row-major strides for `shape`.
pub fn contiguous_strides(shape: &[usize]) -> Strides {
    let mut strides: Strides = SmallVec::from_elem(0, shape.len());
    let mut acc = 1;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        // Wrapping: the strides of a shape that passed the checks above
        // never overflow, and a zero-size view's are never used to address.
        acc = acc.wrapping_mul(shape[i].max(1));
    }
    strides
}

/// Whether `(shape, strides)` lays elements out in row-major order without gaps.
/// Sizes of one are skipped, as PyTorch does, so their strides do not matter.
pub fn is_contiguous(shape: &[usize], strides: &[usize]) -> bool {
    // No elements: contiguous whatever the strides, as in PyTorch.
    if shape.contains(&0) {
        return true;
    }
    let mut expected = 1;
    for (&n, &s) in shape.iter().zip(strides).rev() {
        if n != 1 {
            if s != expected {
                return false;
            }
            expected *= n;
        }
    }
    true
}

/// `[2, 3]`, the way PyTorch prints sizes in messages.
pub fn fmt_shape(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// The shape two operands broadcast to, or PyTorch's error naming both shapes.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Shape> {
    if a == b {
        return Ok(Shape::from_slice(a));
    }
    let n = a.len().max(b.len());
    let mut out: Shape = SmallVec::from_elem(0, n);
    for i in 0..n {
        let da = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let db = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::runtime(format!(
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}; shapes {} and {} do not broadcast",
                fmt_shape(a),
                fmt_shape(b)
            )));
        };
    }
    Ok(out)
}

/// Strides that read a tensor of `(shape, strides)` as if it had `target` shape
/// (the broadcast dimensions get stride 0). `shape` must broadcast to `target`.
pub fn broadcast_strides(shape: &[usize], strides: &[usize], target: &[usize]) -> Strides {
    let lead = target.len() - shape.len();
    let mut out: Strides = SmallVec::from_elem(0, target.len());
    for i in 0..shape.len() {
        out[lead + i] = if shape[i] == 1 && target[lead + i] != 1 {
            0
        } else {
            strides[i]
        };
    }
    out
}

/// Wraps a possibly negative dimension index into `0..ndim`, with PyTorch's error.
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(Error::index(format!(
            "Dimension out of range (expected to be in range of [{}, {}], but got {dim})",
            -n,
            n - 1
        )));
    }
    Ok(if dim < 0 {
        (dim + n) as usize
    } else {
        dim as usize
    })
}

/// Resolves a requested shape that may contain one `-1` against `numel`.
pub fn infer_shape(requested: &[i64], numel: usize) -> Result<Shape> {
    let mut out: Shape = SmallVec::with_capacity(requested.len());
    let mut infer_at = None;
    // `None` once the product of the given sizes overflows: no tensor has
    // that many elements, so the shape can only be invalid.
    let mut known = Some(1usize);
    for (i, &d) in requested.iter().enumerate() {
        if d == -1 {
            if infer_at.is_some() {
                return Err(Error::runtime("only one dimension can be inferred"));
            }
            infer_at = Some(i);
            out.push(0);
        } else if d < 0 {
            return Err(Error::runtime(format!("invalid shape dimension {d}")));
        } else {
            known = known.and_then(|k| k.checked_mul(d as usize));
            out.push(d as usize);
        }
    }
    let fmt_req = || {
        let parts: Vec<String> = requested.iter().map(|d| d.to_string()).collect();
        format!("[{}]", parts.join(", "))
    };
    let invalid = || {
        Error::runtime(format!(
            "shape '{}' is invalid for input of size {numel}",
            fmt_req()
        ))
    };
    match (infer_at, known) {
        (Some(_), Some(0) | None) if numel == 0 => {
            return Err(Error::runtime(format!(
                "cannot reshape tensor of 0 elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous",
                fmt_req()
            )));
        }
        (Some(i), Some(known)) => {
            if known == 0 || !numel.is_multiple_of(known) {
                return Err(invalid());
            }
            out[i] = numel / known;
        }
        (_, None) if numel == 0 => {
            return Err(Error::runtime("numel: integer multiplication overflow"));
        }
        (_, None) => return Err(invalid()),
        (None, Some(known)) => {
            if known != numel {
                return Err(Error::runtime(format!(
                    "shape '{}' is invalid for input of size {numel}",
                    fmt_req()
                )));
            }
        }
    }
    Ok(out)
}

/// Strides for viewing `(shape, strides)` as `new_shape` without a copy, if the
/// memory layout allows it (PyTorch's `computeStride`).
pub fn view_strides(shape: &[usize], strides: &[usize], new_shape: &[usize]) -> Option<Strides> {
    if numel(shape) == 0 {
        return Some(contiguous_strides(new_shape));
    }
    if is_contiguous(shape, strides) {
        return Some(contiguous_strides(new_shape));
    }
    // Walk the old dimensions in chunks that are contiguous among themselves and
    // map each chunk onto a run of new dimensions with the same element count.
    let mut new_strides: Strides = SmallVec::from_elem(0, new_shape.len());
    let mut view_d = new_shape.len() as isize - 1;
    let mut chunk_base_stride = *strides.last()?;
    let mut tensor_numel = 1usize;
    let mut view_numel = 1usize;
    for tensor_d in (0..shape.len()).rev() {
        tensor_numel *= shape[tensor_d];
        let chunk_end = tensor_d == 0
            || (shape[tensor_d - 1] != 1
                && strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
        if chunk_end {
            while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                new_strides[view_d as usize] = view_numel * chunk_base_stride;
                view_numel *= new_shape[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return None;
            }
            if tensor_d > 0 {
                chunk_base_stride = strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    if view_d != -1 {
        return None;
    }
    Some(new_strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]).unwrap().as_slice(), &[3, 4]);
        assert_eq!(broadcast_shapes(&[], &[2, 2]).unwrap().as_slice(), &[2, 2]);
        let err = broadcast_shapes(&[3], &[4]).unwrap_err().to_string();
        assert!(err.contains("[3]") && err.contains("[4]"), "{err}");
    }

    #[test]
    fn view_of_transposed_needs_copy() {
        // A transposed 2x3 cannot be flattened without a copy.
        assert!(view_strides(&[3, 2], &[1, 3], &[6]).is_none());
        // But splitting a dimension of it can.
        assert_eq!(
            view_strides(&[3, 2], &[1, 3], &[3, 2, 1])
                .unwrap()
                .as_slice(),
            &[1, 3, 3]
        );
    }

    #[test]
    fn infer_shape_handles_minus_one() {
        assert_eq!(infer_shape(&[2, -1], 6).unwrap().as_slice(), &[2, 3]);
        assert!(infer_shape(&[4, -1], 6).is_err());
    }

    #[test]
    fn infer_shape_refuses_products_that_wrap() {
        // 7 * 0x6DB6DB6DB6DB6DB7 wraps to exactly 1 in a u64.
        let wraps_to_one = [7, 0x6DB6_DB6D_B6DB_6DB7];
        assert!(infer_shape(&wraps_to_one, 1).is_err());
        assert!(infer_shape(&[1 << 40, 1 << 40, 0], 0).is_err());
        assert!(infer_shape(&[1 << 40, -1, 1 << 40], 1).is_err());
    }

    #[test]
    fn checked_sizes_stay_within_i64() {
        assert_eq!(checked_numel(&[2, 3]).unwrap(), 6);
        assert_eq!(
            checked_numel(&[1 << 62, 2]).unwrap_err().to_string(),
            "RuntimeError: numel: integer multiplication overflow"
        );
        assert_eq!(checked_numel(&[1 << 62, 4, 0]).unwrap(), 0);
        assert!(checked_storage_numel(&[1 << 61], 4).is_err());
        assert_eq!(checked_storage_numel(&[1 << 60], 4).unwrap(), 1 << 60);
        // Empty, with any sizes PyTorch also accepts.
        assert_eq!(checked_storage_numel(&[1 << 62, 0], 4).unwrap(), 0);
        assert_eq!(checked_storage_numel(&[(1 << 63) - 1, 0], 8).unwrap(), 0);
        assert!(checked_storage_numel(&[1 << 40, 1 << 40, 0], 4).is_err());
        assert_eq!(
            checked_storage_numel(&[0, 1 << 62, 1 << 62], 4)
                .unwrap_err()
                .to_string(),
            "RuntimeError: Stride calculation overflowed"
        );
    }
}
