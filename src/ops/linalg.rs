//! Matrix products: `mm`, `dot`, and `matmul` over every 1-D/2-D/batched
//! combination with broadcast batch dimensions.

use smallvec::{smallvec, SmallVec};

use super::{cast_data, expand, mul, result_type, squeeze, transpose, unsqueeze};
use crate::autograd::{needs_record, record};
use crate::error::{Error, Result};
use crate::kernels::matmul::{gemm_into, Mat};
use crate::kernels::{build_vec, SendPtr};
use crate::saved;
use crate::tensor::{broadcast_shapes, fmt_shape, DType, Element, Shape, Tensor, View};

fn check_dtype(a: &Tensor, b: &Tensor, what: &str) -> Result<DType> {
    let (da, db) = (a.dtype(), b.dtype());
    if da != db {
        return Err(Error::runtime(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            da.name(),
            db.name()
        )));
    }
    if da == DType::Bool {
        return Err(Error::runtime(format!(
            "\"{what}\" not implemented for 'Bool'"
        )));
    }
    Ok(da)
}

fn mat<T: Element>(v: &View, off: usize, rs: usize, cs: usize, rows: usize, cols: usize) -> Mat<T> {
    Mat {
        ptr: v.ptr::<T>().wrapping_add(off),
        rows,
        cols,
        row_stride: rs,
        col_stride: cs,
    }
}

/// Batched product of `a` (batch.., m, k) and `b` (batch.., k, n) whose batch
/// dimensions already match (they may be broadcast views with stride 0).
fn bmm_kernel<T: Element>(va: &View, vb: &View) -> Vec<T> {
    let nd = va.shape.len();
    let (m, k, n) = (va.shape[nd - 2], va.shape[nd - 1], vb.shape[nd - 1]);
    let batch: Shape = va.shape[..nd - 2].iter().copied().collect();
    let nb: usize = batch.iter().product();
    let (ars, acs) = (va.strides[nd - 2], va.strides[nd - 1]);
    let (brs, bcs) = (vb.strides[nd - 2], vb.strides[nd - 1]);
    let mut offs: Vec<(usize, usize)> = Vec::with_capacity(nb);
    let bst_a: SmallVec<[usize; 4]> = va.strides[..nd - 2].iter().copied().collect();
    let bst_b: SmallVec<[usize; 4]> = vb.strides[..nd - 2].iter().copied().collect();
    crate::kernels::for_each_row(
        &batch,
        &[bst_a.clone(), bst_b.clone()],
        0,
        nb,
        |_, len, [oa, ob]| {
            let (ia, ib) = (*bst_a.last().unwrap_or(&0), *bst_b.last().unwrap_or(&0));
            for i in 0..len {
                offs.push((oa + i * ia, ob + i * ib));
            }
        },
    );
    let per = m * n;
    build_vec(nb * per, |out| {
        let o = SendPtr(out.as_mut_ptr() as *mut T);
        let run = |bi: usize, parallel: bool| {
            let (oa, ob) = offs[bi];
            // SAFETY: each batch writes its own `per` elements; operands are
            // views whose offsets were derived from their own strides.
            unsafe {
                gemm_into(
                    mat::<T>(va, oa, ars, acs, m, k),
                    mat::<T>(vb, ob, brs, bcs, k, n),
                    o.get().add(bi * per),
                    parallel,
                )
            };
        };
        // Many products up to ~160^3: one per task (measured faster than
        // splitting each one). Few or large ones: parallel inside each.
        if nb > 1 && m * n * k < 1 << 22 {
            crate::kernels::parallel::run(nb * m * n * k, |threads| {
                if threads > 1 {
                    crate::kernels::parallel::tasks(nb, |bi| run(bi, false));
                } else {
                    (0..nb).for_each(|bi| run(bi, false));
                }
            });
        } else {
            (0..nb).for_each(|bi| run(bi, true));
        }
    })
}

/// `mm(a, b)` for two matrices.
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 2 || sb.len() != 2 {
        return Err(Error::runtime(format!(
            "mm: expected 2-D tensors, got {}-D and {}-D",
            sa.len(),
            sb.len()
        )));
    }
    if sa[1] != sb[0] {
        return Err(Error::runtime(format!(
            "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            sa[0], sa[1], sb[0], sb[1]
        )));
    }
    let dt = check_dtype(a, b, "addmm_impl_cpu_")?;
    let out = {
        let (va, vb) = (a.view(), b.view());
        crate::dispatch!(dt, T => Tensor::from_vec(bmm_kernel::<T>(&va, &vb), Shape::from_slice(&[sa[0], sb[1]])))
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (a.requires_grad(), b.requires_grad());
        record(
            "MmBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), ra.then_some(b)],
            |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) {
                    Some(mm(g, &transpose(c.saved(1)?, 0, 1)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(mm(&transpose(c.saved(0)?, 0, 1)?, g)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// Inner product of two vectors.
pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() != 1 || sb.len() != 1 {
        return Err(Error::runtime(format!(
            "1D tensors expected, but got {}D and {}D tensors",
            sa.len(),
            sb.len()
        )));
    }
    if sa[0] != sb[0] {
        return Err(Error::runtime(format!(
            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
            sa[0], sb[0], sa[0], sb[0]
        )));
    }
    let dt = check_dtype(a, b, "dot")?;
    let out = {
        let a2 = unsqueeze_data(a, 0);
        let b2 = unsqueeze_data(b, 1);
        let (va, vb) = (a2.view(), b2.view());
        crate::dispatch!(dt, T => Tensor::from_vec(bmm_kernel::<T>(&va, &vb), Shape::new()))
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (a.requires_grad(), b.requires_grad());
        record(
            "DotBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), ra.then_some(b)],
            |c| {
                let g = c.grad()?;
                let ga = if c.needs(0) {
                    Some(mul(g, c.saved(1)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(mul(g, c.saved(0)?)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// An unrecorded size-1 dimension, for feeding vectors to the matrix kernel.
fn unsqueeze_data(a: &Tensor, dim: usize) -> Tensor {
    let _g = crate::autograd::GradModeGuard::new(false);
    let d = a.detach();
    unsqueeze(&d, dim as i64).unwrap_or(d)
}

/// `a @ b` with NumPy's matmul rules.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (na, nb) = (a.ndim(), b.ndim());
    if na == 0 || nb == 0 {
        return Err(Error::runtime(format!(
            "both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D"
        )));
    }
    let dt = result_type(a, b);
    if a.dtype() != b.dtype() {
        return matmul(&cast_data(a, dt), &cast_data(b, dt));
    }
    match (na, nb) {
        (1, 1) => dot(a, b),
        (2, 2) => mm(a, b),
        (1, _) => squeeze(&matmul(&unsqueeze(a, 0)?, b)?, Some(-2)),
        (_, 1) => squeeze(&matmul(a, &unsqueeze(b, 1)?)?, Some(-1)),
        _ => bmm_broadcast(a, b),
    }
}

/// Batched product with broadcast batch dimensions.
fn bmm_broadcast(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (sa, sb) = (a.shape(), b.shape());
    let (na, nb) = (sa.len(), sb.len());
    let (m, k, k2, n) = (sa[na - 2], sa[na - 1], sb[nb - 2], sb[nb - 1]);
    if k != k2 {
        return Err(Error::runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {k}] but got: [{}, {k2}]; shapes {} and {} cannot be multiplied",
            sa[..na - 2].iter().product::<usize>(),
            sb[..nb - 2].iter().product::<usize>(),
            fmt_shape(&sa),
            fmt_shape(&sb)
        )));
    }
    let dt = check_dtype(a, b, "bmm")?;
    let batch = broadcast_shapes(&sa[..na - 2], &sb[..nb - 2])?;
    let mut ta: Shape = batch.clone();
    ta.extend_from_slice(&[m, k]);
    let mut tb: Shape = batch.clone();
    tb.extend_from_slice(&[k, n]);
    let mut to: Shape = batch.clone();
    to.extend_from_slice(&[m, n]);
    let out = {
        let _g = crate::autograd::GradModeGuard::new(false);
        let (ea, eb) = (
            super::expand(&a.detach(), &ta)?,
            super::expand(&b.detach(), &tb)?,
        );
        let (va, vb) = (ea.view(), eb.view());
        crate::dispatch!(dt, T => Tensor::from_vec(bmm_kernel::<T>(&va, &vb), to.clone()))
    };
    if needs_record(&[a, b]) {
        let (ra, rb) = (a.requires_grad(), b.requires_grad());
        record(
            "BmmBackward0",
            &[a, b],
            &out,
            saved![rb.then_some(a), ra.then_some(b)],
            |c| {
                let g = c.grad()?;
                // The engine sums these back over broadcast batch dimensions.
                let ga = if c.needs(0) {
                    Some(matmul(g, &transpose(c.saved(1)?, -1, -2)?)?)
                } else {
                    None
                };
                let gb = if c.needs(1) {
                    Some(matmul(&transpose(c.saved(0)?, -1, -2)?, g)?)
                } else {
                    None
                };
                Ok(smallvec![ga, gb])
            },
        );
    }
    Ok(out)
}

/// `bmm(a, b)`: strictly 3-D batches of equal size.
pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
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
    check_dtype(a, b, "bmm")?;
    matmul(a, b)
}

/// `outer(a, b)`: `a[i] * b[j]` for two vectors.
pub fn outer(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        return Err(Error::runtime(format!(
            "outer: Expected 1-D argument self, but got {}-D",
            if a.ndim() != 1 { a.ndim() } else { b.ndim() }
        )));
    }
    mul(&unsqueeze(a, 1)?, &unsqueeze(b, 0)?)
}

/// `linear(x, w, b) = x @ w.T + b`.
pub fn linear(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    let y = if w.ndim() == 1 {
        matmul(x, w)?
    } else {
        if w.ndim() != 2 {
            return Err(Error::runtime(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                w.ndim()
            )));
        }
        let (xs, ws) = (x.shape(), w.shape());
        if xs.last().copied() != Some(ws[1]) {
            return Err(Error::runtime(format!(
                "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
                xs[..xs.len().saturating_sub(1)].iter().product::<usize>(),
                xs.last().copied().unwrap_or(0),
                ws[1],
                ws[0]
            )));
        }
        matmul(x, &transpose(w, 0, 1)?)?
    };
    match b {
        Some(b) => super::add(&y, b),
        None => Ok(y),
    }
}

/// One operand's subscripts after `...` has been expanded.
type Labels = SmallVec<[u8; 8]>;

/// Marks where an operand's `...` stood until its width is known.
const ELLIPSIS: u8 = 255;

fn label_name(l: u8) -> char {
    if l < 128 {
        l as char
    } else {
        '.'
    }
}

/// Parses `"ij,jk->ik"` into per-operand labels and output labels. `...`
/// becomes internal labels (bytes >= 128) aligned from the right, as in NumPy.
/// Follows PyTorch's parser byte by byte, so its errors (and the indices
/// they name) are the same; spaces are ignored anywhere.
fn parse_einsum(eq: &str, ndims: &[usize]) -> Result<(Vec<Labels>, Labels)> {
    let bytes = eq.as_bytes();
    let arrow = eq.find("->");
    let lhs = &bytes[..arrow.unwrap_or(bytes.len())];
    let mut terms: Vec<Labels> = vec![Labels::new()];
    let mut has_ell = false;
    let mut i = 0;
    while i < lhs.len() {
        let cur = terms.len() - 1;
        match lhs[i] {
            b' ' => {}
            b'.' => {
                if has_ell {
                    return Err(Error::runtime(format!(
                        "einsum(): found '.' for operand {cur} for which an ellipsis was already found"
                    )));
                }
                if !(i + 2 < lhs.len() && lhs[i + 1] == b'.' && lhs[i + 2] == b'.') {
                    return Err(Error::runtime(format!(
                        "einsum(): found '.' for operand {cur} that is not part of any ellipsis"
                    )));
                }
                i += 2;
                terms[cur].push(ELLIPSIS);
                has_ell = true;
            }
            b',' => {
                if terms.len() >= ndims.len() {
                    return Err(Error::runtime(
                        "einsum(): fewer operands were provided than specified in the equation",
                    ));
                }
                terms.push(Labels::new());
                has_ell = false;
            }
            c if c.is_ascii_alphabetic() => terms[cur].push(c),
            _ => {
                return Err(Error::runtime(format!(
                    "einsum(): invalid subscript given at index {i} in the equation string, subscripts must be in [a-zA-Z]"
                )))
            }
        }
        i += 1;
    }
    if terms.len() != ndims.len() {
        return Err(Error::runtime(
            "einsum(): more operands were provided than specified in the equation",
        ));
    }
    let mut count = [0usize; 128];
    // How many dimensions each operand's ellipsis covers, and the widest.
    let mut ell_dims = 0;
    let mut n_ell = Vec::with_capacity(terms.len());
    for (k, (term, &nd)) in terms.iter().zip(ndims).enumerate() {
        let explicit = term.iter().filter(|&&l| l != ELLIPSIS).count();
        for &l in term.iter().filter(|&&l| l != ELLIPSIS) {
            count[l as usize] += 1;
        }
        if term.contains(&ELLIPSIS) {
            if explicit > nd {
                return Err(Error::runtime(format!(
                    "einsum(): the number of subscripts in the equation ({explicit}) is more than the number of dimensions ({nd}) for operand {k}"
                )));
            }
            ell_dims = ell_dims.max(nd - explicit);
        } else if explicit != nd {
            return Err(Error::runtime(format!(
                "einsum(): the number of subscripts in the equation ({explicit}) does not match the number of dimensions ({nd}) for operand {k} and no ellipsis was given"
            )));
        }
        n_ell.push(nd - explicit);
    }
    if ell_dims > 100 {
        return Err(Error::runtime(
            "einsum(): too many dimensions under the ellipsis",
        ));
    }
    let expand_ell = |term: &Labels, n: usize| -> Labels {
        let mut out = Labels::new();
        for &l in term {
            if l == ELLIPSIS {
                out.extend((0..n).map(|k| (128 + ell_dims - n + k) as u8));
            } else {
                out.push(l);
            }
        }
        out
    };
    let ops: Vec<Labels> = terms
        .iter()
        .zip(&n_ell)
        .map(|(t, &n)| expand_ell(t, n))
        .collect();
    let out = match arrow {
        Some(pos) => {
            let rhs = &bytes[pos + 2..];
            let mut o = Labels::new();
            let mut ell_out = false;
            let mut i = 0;
            while i < rhs.len() {
                match rhs[i] {
                    b' ' => {}
                    b'.' => {
                        if ell_out {
                            return Err(Error::runtime(
                                "einsum(): found '.' for output but an ellipsis (...) was already found",
                            ));
                        }
                        if !(i + 2 < rhs.len() && rhs[i + 1] == b'.' && rhs[i + 2] == b'.') {
                            return Err(Error::runtime(
                                "einsum(): found '.' for output that is not part of any ellipsis (...)",
                            ));
                        }
                        i += 2;
                        o.extend((0..ell_dims).map(|k| (128 + k) as u8));
                        ell_out = true;
                    }
                    c if c.is_ascii_alphabetic() => {
                        if count[c as usize] == 0 {
                            return Err(Error::runtime(format!(
                                "einsum(): output subscript {} does not appear in the equation for any input operand",
                                c as char
                            )));
                        }
                        if o.contains(&c) {
                            return Err(Error::runtime(format!(
                                "einsum(): output subscript {} appears more than once in the output",
                                c as char
                            )));
                        }
                        o.push(c);
                    }
                    _ => {
                        return Err(Error::runtime(format!(
                            "einsum(): invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]",
                            lhs.len() + 2 + i
                        )))
                    }
                }
                i += 1;
            }
            o
        }
        None => {
            // Implicit output: the ellipsis, then the labels seen once (a
            // label repeated within one operand counts twice), sorted.
            let mut o: Labels = (0..ell_dims).map(|k| (128 + k) as u8).collect();
            o.extend((0u8..128).filter(|&l| count[l as usize] == 1));
            o
        }
    };
    Ok((ops, out))
}

/// Sums out the labels of `t` that nothing else needs.
fn einsum_prepare(t: &Tensor, labels: &Labels, needed: &[u8]) -> Result<(Tensor, Labels)> {
    let drop: SmallVec<[i64; 4]> = labels
        .iter()
        .enumerate()
        .filter(|(_, l)| !needed.contains(l))
        .map(|(i, _)| i as i64)
        .collect();
    if drop.is_empty() {
        return Ok((t.clone(), labels.clone()));
    }
    let kept: Labels = labels
        .iter()
        .copied()
        .filter(|l| needed.contains(l))
        .collect();
    Ok((super::sum(t, Some(&drop), false)?, kept))
}

/// Checks operand `k`'s sizes against those seen so far (size 1 broadcasts)
/// and takes the diagonal for each label repeated within it, in PyTorch's
/// order, so the first problem found is the one PyTorch reports. Returns the
/// operand with one dimension per distinct label.
fn einsum_operand(
    t: &Tensor,
    k: usize,
    labels: &Labels,
    sizes: &mut [Option<usize>; 256],
) -> Result<(Tensor, Labels)> {
    let mut t = t.clone();
    let mut kept = Labels::new();
    for &l in labels {
        let dim = kept.len();
        let n = t.shape()[dim];
        if let Some(p) = kept.iter().position(|&m| m == l) {
            let first = t.shape()[p];
            if n != first {
                return Err(Error::runtime(format!(
                    "einsum(): subscript {} is repeated for operand {k} but the sizes don't match, {n} != {first}",
                    label_name(l)
                )));
            }
            // The diagonal replaces both dimensions at the first one's place.
            let d = super::diagonal(&t, 0, p as i64, dim as i64)?;
            t = super::movedim(&d, -1, p as i64)?;
            continue;
        }
        match sizes[l as usize] {
            Some(m) if m != n && m != 1 && n != 1 => {
                // PyTorch's wording, down to the missing space after the operand number.
                return Err(Error::runtime(if l < 128 {
                    format!(
                        "einsum(): subscript {} has size {n} for operand {k} which does not broadcast with previously seen size {m}",
                        l as char
                    )
                } else {
                    format!(
                        "einsum(): dimension {dim} covered by ellipsis in operand {k}has size {n} which does not broadcast with previously seen ellipsis with size {m} for the respective dimension"
                    )
                }));
            }
            Some(m) if m != 1 => {}
            _ => sizes[l as usize] = Some(n),
        }
        kept.push(l);
    }
    Ok((t, kept))
}

/// Contracts two prepared operands into one with labels `keep` order-free:
/// batch (shared, kept), contracted (shared, dropped), left-only, right-only.
fn einsum_pair(
    a: &Tensor,
    la: &Labels,
    b: &Tensor,
    lb: &Labels,
    keep: &[u8],
    sizes: &[Option<usize>; 256],
) -> Result<(Tensor, Labels)> {
    let batch: Labels = la
        .iter()
        .copied()
        .filter(|l| lb.contains(l) && keep.contains(l))
        .collect();
    let contr: Labels = la
        .iter()
        .copied()
        .filter(|l| lb.contains(l) && !keep.contains(l))
        .collect();
    let left: Labels = la.iter().copied().filter(|l| !lb.contains(l)).collect();
    let right: Labels = lb.iter().copied().filter(|l| !la.contains(l)).collect();
    let size = |l: &u8| sizes[*l as usize].unwrap_or(1);
    let pos = |ls: &Labels, l: u8| ls.iter().position(|&m| m == l).unwrap_or(0) as i64;
    // Size-1 labels broadcast against the other operand's size.
    let full = |t: &Tensor, ls: &Labels| -> Result<Tensor> {
        let target: Shape = ls.iter().map(size).collect();
        expand(t, &target)
    };
    let a = full(a, la)?;
    let b = full(b, lb)?;
    let pa: SmallVec<[i64; 8]> = batch
        .iter()
        .chain(&left)
        .chain(&contr)
        .map(|&l| pos(la, l))
        .collect();
    let pb: SmallVec<[i64; 8]> = batch
        .iter()
        .chain(&contr)
        .chain(&right)
        .map(|&l| pos(lb, l))
        .collect();
    let (nb, nl, nc, nr) = (
        batch.iter().map(size).product::<usize>(),
        left.iter().map(size).product::<usize>(),
        contr.iter().map(size).product::<usize>(),
        right.iter().map(size).product::<usize>(),
    );
    let a3 = super::reshape(&super::permute(&a, &pa)?, &[nb, nl, nc])?;
    let b3 = super::reshape(&super::permute(&b, &pb)?, &[nb, nc, nr])?;
    let r = matmul(&a3, &b3)?;
    let labels: Labels = batch.iter().chain(&left).chain(&right).copied().collect();
    let shape: Shape = labels.iter().map(size).collect();
    Ok((super::reshape(&r, &shape)?, labels))
}

/// `einsum(equation, *operands)`: sums over shared labels via batched
/// matrix products (any number of operands, contracted left to right);
/// built from differentiable ops, so it differentiates to any order.
pub fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
    if operands.is_empty() {
        return Err(Error::value(
            "einsum(): must specify the equation string and at least one operand, or at least one operand and its subscripts list",
        ));
    }
    let ndims: Vec<usize> = operands.iter().map(|t| t.ndim()).collect();
    let (labels, out) = parse_einsum(equation, &ndims)?;
    let mut sizes: [Option<usize>; 256] = [None; 256];
    let mut operands_d = Vec::with_capacity(operands.len());
    let mut labels_d = Vec::with_capacity(operands.len());
    for (k, (t, l)) in operands.iter().zip(&labels).enumerate() {
        let (t, l) = einsum_operand(t, k, l, &mut sizes)?;
        operands_d.push(t);
        labels_d.push(l);
    }
    let (operands, labels) = (&operands_d[..], &labels_d[..]);
    // Labels each operand must keep: in the output or in any other operand.
    let needed_by = |skip: usize, extra: &[u8]| -> Vec<u8> {
        let mut v: Vec<u8> = out.to_vec();
        v.extend_from_slice(extra);
        for (j, l) in labels.iter().enumerate() {
            if j != skip {
                v.extend_from_slice(l);
            }
        }
        v
    };
    let (mut acc, mut acc_l) = einsum_prepare(&operands[0], &labels[0], &needed_by(0, &[]))?;
    for i in 1..operands.len() {
        let (b, lb) = einsum_prepare(&operands[i], &labels[i], &needed_by(i, &acc_l))?;
        // After this pair, keep what the output or later operands use.
        let mut keep: Vec<u8> = out.to_vec();
        for l in &labels[i + 1..] {
            keep.extend_from_slice(l);
        }
        let (r, lr) = einsum_pair(&acc, &acc_l, &b, &lb, &keep, &sizes)?;
        acc = r;
        acc_l = lr;
    }
    // Whatever is left over and not in the output is summed out.
    let (acc, acc_l) = einsum_prepare(&acc, &acc_l, &out)?;
    let target: Shape = acc_l
        .iter()
        .map(|l| sizes[*l as usize].unwrap_or(1))
        .collect();
    let acc = expand(&acc, &target)?;
    let perm: SmallVec<[i64; 8]> = out
        .iter()
        .map(|l| acc_l.iter().position(|m| m == l).unwrap_or(0) as i64)
        .collect();
    super::permute(&acc, &perm)
}
