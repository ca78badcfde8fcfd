//! Discrete draws: `random_`, Bernoulli, `randperm`, multinomial with
//! replacement and geometric.

use super::{cast, CpuGenerator};
use crate::error::{alloc_vec, Error, Result};
use crate::tensor::{numel, DType, Shape, Tensor};

/// `random_(from, to)`: `random() % range + from`, 64-bit draws when the
/// range needs them; `range` is `to - from` as an unsigned number.
pub fn randint(g: &mut CpuGenerator, low: i64, range: u64, shape: Shape, dtype: DType) -> Tensor {
    let n = numel(&shape);
    let mut v: Vec<i64> = alloc_vec(n);
    let wide = range >= 1 << 32 && dtype != DType::Bool;
    v.extend((0..n).map(|_| {
        let r = if wide {
            g.random64() % range
        } else {
            g.random() as u64 % range
        };
        low.wrapping_add(r as i64)
    }));
    cast(Tensor::from_vec(v, shape), dtype)
}

/// `random_()`: integers uniform over what the dtype holds exactly
/// (`uniform_int_distribution`).
pub fn random_full(g: &mut CpuGenerator, shape: Shape, dtype: DType) -> Tensor {
    let n = numel(&shape);
    match dtype {
        DType::Bool => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| g.random() & 1 == 1));
            Tensor::from_vec(v, shape)
        }
        DType::I64 => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| (g.random64() % (1u64 << 63)) as i64));
            Tensor::from_vec(v, shape)
        }
        DType::F32 => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| (g.random() as u64 % ((1u64 << 24) + 1)) as f32));
            Tensor::from_vec(v, shape)
        }
        DType::F64 => {
            let mut v = alloc_vec(n);
            v.extend((0..n).map(|_| (g.random64() % ((1u64 << 53) + 1)) as f64));
            Tensor::from_vec(v, shape)
        }
        // 32 random bits modulo the type's largest value + 1 (its mantissa's
        // range for the 16-bit floats), as PyTorch's `uniform_int`.
        dt => {
            let modulus: u64 = match dt {
                DType::U8 => 256,
                DType::I8 => 128,
                DType::I16 => 1 << 15,
                DType::I32 => 1 << 31,
                DType::F16 => (1 << 11) + 1,
                _ => (1 << 8) + 1,
            };
            let mut v: Vec<i64> = alloc_vec(n);
            v.extend((0..n).map(|_| (g.random() as u64 % modulus) as i64));
            crate::ops::cast_data(&Tensor::from_vec(v, shape), dt)
        }
    }
}

/// `bernoulli_(p)` with a scalar `p`: the generic kernel (a double uniform
/// per element, 1 when below `p`). PyTorch builds with MKL take a different
/// path on Intel CPUs (`viRngBernoulli`), whose numbers this does not give.
pub fn bernoulli_scalar(
    g: &mut CpuGenerator,
    shape: Shape,
    dtype: DType,
    p: f64,
) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::runtime(format!(
            "bernoulli_ expects p to be in [0, 1], but got p={p}"
        )));
    }
    let n = numel(&shape);
    let mut v: Vec<f64> = alloc_vec(n);
    v.extend((0..n).map(|_| if g.uniform_f64() < p { 1.0 } else { 0.0 }));
    Ok(cast(Tensor::from_vec(v, shape), dtype))
}

/// `bernoulli(p)` with a tensor of probabilities: the uniform has `p`'s
/// precision (a float draw for float32 `p`, a double draw for float64).
pub fn bernoulli_tensor(g: &mut CpuGenerator, p: &Tensor, dtype: DType) -> Result<Tensor> {
    let shape = p.shape();
    let check = |x: f64| {
        if (0.0..=1.0).contains(&x) {
            Ok(())
        } else {
            Err(Error::runtime(
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.",
            ))
        }
    };
    let out: Vec<f64> = match p.dtype() {
        DType::F64 => {
            let ps = p.to_vec::<f64>();
            ps.iter().try_for_each(|&x| check(x))?;
            ps.iter()
                .map(|&x| if g.uniform_f64() < x { 1.0 } else { 0.0 })
                .collect()
        }
        DType::F32 | DType::F16 | DType::BF16 => {
            let ps = p.to_vec::<f32>();
            ps.iter().try_for_each(|&x| check(x as f64))?;
            ps.iter()
                .map(|&x| if g.uniform_f32() < x { 1.0 } else { 0.0 })
                .collect()
        }
        other => {
            return Err(Error::runtime(format!(
                "\"bernoulli_tensor_cpu_p_\" not implemented for '{}'",
                other.scalar_name()
            )))
        }
    };
    Ok(cast(Tensor::from_vec(out, shape), dtype))
}

/// `randperm(n)`: `randperm_cpu`'s Fisher-Yates with 32-bit draws (the
/// branch every `n` below `u32::MAX / 20` takes), and its inside-out
/// variant with 64-bit draws above.
pub fn randperm(g: &mut CpuGenerator, n: usize) -> Vec<i64> {
    let mut r: Vec<i64> = alloc_vec(n);
    if (n as u64) < u32::MAX as u64 / 20 {
        r.extend(0..n as i64);
        for i in 0..n.saturating_sub(1) {
            let z = g.random() as usize % (n - i);
            r.swap(i, i + z);
        }
    } else {
        r.resize(n, 0);
        for i in 0..n {
            let z = (g.random64() % (i as u64 + 1)) as usize;
            r[i] = r[z];
            r[z] = i as i64;
        }
    }
    r
}

/// Multinomial sampling with replacement (the CPU kernel): each row's
/// cumulative sum normalised by its total, the last bucket forced to 1, and a
/// double uniform located by binary search. `rows` holds the probabilities
/// (already validated) row after row, each `k` long.
pub fn multinomial_with_replacement<T>(
    g: &mut CpuGenerator,
    rows: &[T],
    k: usize,
    draws: usize,
) -> Vec<i64>
where
    T: Copy
        + PartialOrd
        + std::ops::Add<Output = T>
        + std::ops::Div<Output = T>
        + Into<f64>
        + From<u8>,
{
    let mut out = alloc_vec((rows.len() / k.max(1)).saturating_mul(draws));
    let mut cum: Vec<T> = crate::error::filled_vec(k, T::from(0));
    for row in rows.chunks_exact(k) {
        let mut sum = T::from(0);
        for (c, &p) in cum.iter_mut().zip(row) {
            sum = sum + p;
            *c = sum;
        }
        for c in cum.iter_mut() {
            *c = *c / sum;
        }
        cum[k - 1] = T::from(1);
        for _ in 0..draws {
            let u = g.uniform_f64();
            let (mut lo, mut hi) = (0usize, k);
            while hi > lo {
                let mid = lo + (hi - lo) / 2;
                if cum[mid].into() < u {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            out.push(lo as i64);
        }
    }
    out
}

/// `geometric_(p)`: `geometric_distribution<double>`,
/// `ceil(log(u) / log1p(-p))` from a double uniform, then cast (integer
/// dtypes too).
pub fn geometric(g: &mut CpuGenerator, shape: Shape, dtype: DType, p: f64) -> Result<Tensor> {
    if dtype == DType::Bool {
        return Err(Error::runtime(
            "\"geometric_cpu\" not implemented for 'Bool'".to_string(),
        ));
    }
    if !(p > 0.0 && p < 1.0) {
        return Err(Error::runtime(format!(
            "geometric_ expects p to be in (0, 1), but got p={p}"
        )));
    }
    let n = numel(&shape);
    let mut v: Vec<f64> = alloc_vec(n);
    v.extend((0..n).map(|_| (g.uniform_f64().ln() / (-p).ln_1p()).ceil()));
    Ok(cast(Tensor::from_vec(v, shape), dtype))
}
