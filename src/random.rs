//! The default random generator: a Mersenne Twister (MT19937, as PyTorch's
//! CPU generator), seeded by `manual_seed`, shared by every thread.

use parking_lot::Mutex;
use rand_mt::Mt;

use crate::error::alloc_vec;

static GEN: Mutex<Option<Mt>> = Mutex::new(None);

/// The seed PyTorch's default generator starts from.
const DEFAULT_SEED: u32 = 67280421310721u64 as u32;

pub fn manual_seed(seed: u64) {
    *GEN.lock() = Some(Mt::new(seed as u32));
}

fn with_gen<R>(f: impl FnOnce(&mut Mt) -> R) -> R {
    let mut g = GEN.lock();
    let mt = g.get_or_insert_with(|| Mt::new(DEFAULT_SEED));
    f(mt)
}

/// Uniform floats in [0, 1) with 24 random bits, as PyTorch draws float32.
pub fn uniform_f32(n: usize) -> Vec<f32> {
    let mut out = alloc_vec(n);
    with_gen(|g| {
        out.extend(
            (0..n).map(|_| (g.next_u32() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32)),
        )
    });
    out
}

/// Uniform doubles in [0, 1) with 53 random bits.
pub fn uniform_f64(n: usize) -> Vec<f64> {
    let mut out = alloc_vec(n);
    with_gen(|g| {
        out.extend((0..n).map(|_| {
            let hi = g.next_u32() as u64;
            let lo = g.next_u32() as u64;
            (((hi << 32) | lo) & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
        }))
    });
    out
}

/// Standard normal samples by the Box-Muller transform.
pub fn normal_f64(n: usize) -> Vec<f64> {
    let u = uniform_f64(n + n % 2);
    let mut out = alloc_vec(n + 1);
    for pair in u.chunks_exact(2) {
        let (u1, u2) = (pair[0], pair[1]);
        let r = (-2.0 * (1.0 - u2).ln()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        out.push(r * theta.cos());
        out.push(r * theta.sin());
    }
    out.truncate(n);
    out
}

/// Integers uniform in `[low, high)`; `high > low` is checked by the caller.
pub fn randint(low: i64, high: i64, n: usize) -> Vec<i64> {
    // The span of [i64::MIN, i64::MAX) does not fit in an i64; in two's
    // complement it is still right as a u64, and so is adding it back.
    let range = high.wrapping_sub(low) as u64;
    let mut out = alloc_vec(n);
    with_gen(|g| {
        out.extend((0..n).map(|_| {
            let r = if range <= u32::MAX as u64 {
                g.next_u32() as u64 % range
            } else {
                g.next_u64() % range
            };
            low.wrapping_add(r as i64)
        }))
    });
    out
}
