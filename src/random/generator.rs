//! PyTorch's CPU generator: `at::mt19937` plus the cached Box-Muller sample.

use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use crate::error::{Error, Result};

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UMASK: u32 = 0x8000_0000;
const LMASK: u32 = 0x7fff_ffff;

/// The seed PyTorch's default generator starts from (`default_rng_seed_val`).
pub const DEFAULT_SEED: u64 = 67280421310721;

/// Bytes of PyTorch's `CPUGeneratorImplState` (what `get_rng_state` returns).
pub const STATE_BYTES: usize = 5056;
/// Bytes of the older `CPUGeneratorImplStateLegacy`, still accepted by `set_state`.
const LEGACY_STATE_BYTES: usize = 5048;

/// MT19937's output tempering of one state word.
#[inline(always)]
fn temper(mut y: u32) -> u32 {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c_5680;
    y ^= (y << 15) & 0xefc6_0000;
    y ^ (y >> 18)
}

/// The bits of a float buffer as words, to be drawn into in place.
fn bytemuck_u32(v: &mut [f32]) -> &mut [u32] {
    // SAFETY: f32 and u32 have one size and alignment, and every bit
    // pattern is a valid u32 (and later a valid f32).
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u32, v.len()) }
}

/// One CPU generator: `at::CPUGeneratorImpl`'s fields.
#[derive(Clone)]
pub struct CpuGenerator {
    seed: u64,
    state: [u32; N],
    left: i32,
    next: u32,
    next_double_normal: Option<f64>,
    next_float_normal: Option<f32>,
}

impl CpuGenerator {
    pub fn new(seed: u64) -> Self {
        let mut g = CpuGenerator {
            seed: 0,
            state: [0; N],
            left: 1,
            next: 0,
            next_double_normal: None,
            next_float_normal: None,
        };
        g.set_seed(seed);
        g
    }

    /// `manual_seed`: a fresh stream and no cached normal sample.
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
        self.state[0] = seed as u32;
        for j in 1..N {
            let p = self.state[j - 1];
            self.state[j] = 1812433253u32
                .wrapping_mul(p ^ (p >> 30))
                .wrapping_add(j as u32);
        }
        self.left = 1;
        self.next = 0;
        self.next_double_normal = None;
        self.next_float_normal = None;
    }

    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    fn next_state(&mut self) {
        let s = &mut self.state;
        let twist = |u: u32, v: u32| {
            (((u & UMASK) | (v & LMASK)) >> 1) ^ if v & 1 != 0 { MATRIX_A } else { 0 }
        };
        for k in 0..N - M {
            s[k] = s[k + M] ^ twist(s[k], s[k + 1]);
        }
        for k in N - M..N - 1 {
            s[k] = s[k + M - N] ^ twist(s[k], s[k + 1]);
        }
        s[N - 1] = s[M - 1] ^ twist(s[N - 1], s[0]);
        self.left = N as i32;
        self.next = 0;
    }

    /// `random()` into every slot of `out`, the values repeated calls would
    /// give, tempered a run of the state at a time (the loop vectorises:
    /// a million float32 uniforms took 4.8 ms one call at a time).
    pub fn fill_random(&mut self, out: &mut [u32]) {
        let mut i = 0;
        while i < out.len() {
            if self.left == 1 {
                // This draw twists first and then reads word 0 (`left` is
                // reset to N by the twist, as in `random`).
                self.next_state();
                out[i] = temper(self.state[0]);
                self.next = 1;
                i += 1;
                continue;
            }
            let take = ((self.left - 1) as usize).min(out.len() - i);
            let from = self.next as usize;
            for (o, &w) in out[i..i + take]
                .iter_mut()
                .zip(&self.state[from..from + take])
            {
                *o = temper(w);
            }
            self.next += take as u32;
            self.left -= take as i32;
            i += take;
        }
    }

    /// [`Self::uniform_f32`] into every slot of `out`.
    pub fn fill_uniform_f32(&mut self, out: &mut [f32]) {
        let bits: &mut [u32] = bytemuck_u32(out);
        self.fill_random(bits);
        for x in out.iter_mut() {
            let r = x.to_bits();
            *x = (r & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32);
        }
    }

    /// `generator->random()`: one 32-bit draw.
    #[inline]
    pub fn random(&mut self) -> u32 {
        self.left -= 1;
        if self.left == 0 {
            self.next_state();
        }
        let y = self.state[self.next as usize];
        self.next += 1;
        temper(y)
    }

    /// `generator->random64()`: two 32-bit draws, the first the high half.
    #[inline]
    pub fn random64(&mut self) -> u64 {
        let hi = self.random() as u64;
        let lo = self.random() as u64;
        (hi << 32) | lo
    }

    /// `uniform_real_distribution<float>(0, 1)`: 24 bits of one 32-bit draw.
    #[inline]
    pub fn uniform_f32(&mut self) -> f32 {
        (self.random() & ((1 << 24) - 1)) as f32 * (1.0 / (1u32 << 24) as f32)
    }

    /// `uniform_real_distribution<double>(0, 1)`: 53 bits of one 64-bit draw.
    #[inline]
    pub fn uniform_f64(&mut self) -> f64 {
        (self.random64() & ((1u64 << 53) - 1)) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `at::normal_distribution<double>(mean, std)`: Box-Muller, the sine
    /// sample cached in the generator for the next call.
    pub fn normal_f64(&mut self, mean: f64, std: f64) -> f64 {
        // `val * std + mean`, contracted to one FMA in PyTorch's build.
        if let Some(z) = self.next_double_normal.take() {
            return z.mul_add(std, mean);
        }
        let u1 = self.uniform_f64();
        let u2 = self.uniform_f64();
        let r = (-2.0 * (-u2).ln_1p()).sqrt();
        let theta = 2.0 * std::f64::consts::PI * u1;
        self.next_double_normal = Some(r * theta.sin());
        (r * theta.cos()).mul_add(std, mean)
    }

    /// PyTorch's byte layout of `CPUGeneratorImplState` (x86-64/aarch64 little endian).
    pub fn get_state(&self) -> Vec<u8> {
        let mut b = vec![0u8; STATE_BYTES];
        b[0..8].copy_from_slice(&self.seed.to_le_bytes());
        b[8..12].copy_from_slice(&self.left.to_le_bytes());
        b[12..16].copy_from_slice(&1i32.to_le_bytes());
        b[16..24].copy_from_slice(&(self.next as u64).to_le_bytes());
        for (k, s) in self.state.iter().enumerate() {
            b[24 + 8 * k..32 + 8 * k].copy_from_slice(&(*s as u64).to_le_bytes());
        }
        if let Some(y) = self.next_double_normal {
            b[5024..5032].copy_from_slice(&y.to_le_bytes());
            b[5040..5044].copy_from_slice(&1i32.to_le_bytes());
        }
        if let Some(f) = self.next_float_normal {
            b[5048..5052].copy_from_slice(&f.to_le_bytes());
            b[5052] = 1;
        }
        b
    }

    /// Restores a state from `get_state` (or PyTorch's legacy layout); on
    /// error the generator is unchanged.
    pub fn set_state(&mut self, b: &[u8]) -> Result<()> {
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let i32_at = |o: usize| i32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let f64_at = |o: usize| f64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        let (mut float_normal, double_normal);
        match b.len() {
            LEGACY_STATE_BYTES => {
                float_normal = None;
                double_normal = (i32_at(5040) != 0).then(|| {
                    let theta = 2.0 * std::f64::consts::PI * f64_at(5016);
                    f64_at(5032) * theta.sin()
                });
            }
            STATE_BYTES => {
                float_normal = None;
                if b[5052] != 0 {
                    float_normal = Some(f32::from_le_bytes(b[5048..5052].try_into().unwrap()));
                }
                double_normal = (i32_at(5040) != 0).then(|| f64_at(5024));
            }
            n => {
                return Err(Error::runtime(format!(
                    "Expected either a CPUGeneratorImplStateLegacy of size {LEGACY_STATE_BYTES} \
                     or a CPUGeneratorImplState of size {STATE_BYTES} but found the input RNG \
                     state size to be {n}"
                )))
            }
        }
        let left = i32_at(8);
        let seeded = i32_at(12) != 0;
        let next = u64_at(16) as u32;
        if !(seeded && left > 0 && left <= N as i32 && next as usize <= N) {
            return Err(Error::runtime("Invalid mt19937 state"));
        }
        self.seed = u64_at(0);
        self.left = left;
        self.next = next;
        for k in 0..N {
            self.state[k] = u64_at(24 + 8 * k) as u32;
        }
        self.next_double_normal = double_normal;
        self.next_float_normal = float_normal.take();
        Ok(())
    }
}

/// A generator shared between Python objects and threads.
pub type GenRef = Arc<Mutex<CpuGenerator>>;

static DEFAULT: LazyLock<GenRef> =
    LazyLock::new(|| Arc::new(Mutex::new(CpuGenerator::new(DEFAULT_SEED))));

/// `torch.default_generator`.
pub fn default_generator() -> &'static GenRef {
    &DEFAULT
}

pub fn manual_seed(seed: u64) {
    DEFAULT.lock().set_seed(seed);
}

/// Runs `f` on `gen`, or on the default generator when `None`.
pub fn with_gen<R>(gen: Option<&GenRef>, f: impl FnOnce(&mut CpuGenerator) -> R) -> R {
    let mut g = gen.unwrap_or(&DEFAULT).lock();
    f(&mut g)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of draws is the stream one call at a time would give, from
    /// any position (just seeded, mid-state, one before a twist) and
    /// across several twists; the generator ends in the same state.
    #[test]
    fn batched_draws_are_the_sequential_stream() {
        for skip in [0usize, 1, 300, 622, 623, 624, 625, 1247] {
            for len in [0usize, 1, 5, 623, 624, 625, 2000] {
                let (mut a, mut b) = (CpuGenerator::new(7), CpuGenerator::new(7));
                for _ in 0..skip {
                    a.random();
                    b.random();
                }
                let want: Vec<u32> = (0..len).map(|_| a.random()).collect();
                let mut got = vec![0u32; len];
                b.fill_random(&mut got);
                assert_eq!(got, want, "skip {skip}, len {len}");
                assert_eq!(a.random(), b.random(), "skip {skip}, len {len}: next draw");
                let mut f = vec![0f32; len];
                let (mut c, mut d) = (a.clone(), b.clone());
                d.fill_uniform_f32(&mut f);
                let one: Vec<f32> = (0..len).map(|_| c.uniform_f32()).collect();
                assert_eq!(f, one);
            }
        }
    }

    #[test]
    fn mt19937_reference_stream() {
        // The 10000th output of std::mt19937 seeded 5489 (C++11 [rand.predef]).
        let mut g = CpuGenerator::new(5489);
        let mut last = 0;
        for _ in 0..10000 {
            last = g.random();
        }
        assert_eq!(last, 4123659995);
    }

    #[test]
    fn state_round_trip_keeps_the_cached_normal() {
        let mut g = CpuGenerator::new(3);
        g.normal_f64(0.0, 1.0);
        let s = g.get_state();
        let mut h = CpuGenerator::new(0);
        h.set_state(&s).unwrap();
        assert_eq!(g.normal_f64(0.0, 1.0), h.normal_f64(0.0, 1.0));
        let a: Vec<u32> = (0..700).map(|_| g.random()).collect();
        let b: Vec<u32> = (0..700).map(|_| h.random()).collect();
        assert_eq!(a, b);
        assert!(h.set_state(&s[..100]).is_err());
    }
}
