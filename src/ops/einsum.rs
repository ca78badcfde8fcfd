//! `einsum`: PyTorch's equation parser (same errors), operands reduced and
//! permuted to their needed labels, and a left-to-right chain of pairwise
//! products, each one `bmm`, so the graph is made of recorded ops.

use smallvec::SmallVec;

use super::{expand, matmul};
use crate::error::{Error, Result};
use crate::tensor::{Shape, Tensor};

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
pub(crate) fn einsum(equation: &str, operands: &[Tensor]) -> Result<Tensor> {
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
