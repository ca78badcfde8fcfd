//! Matrix products too small for the gemm crate: an 8x64 @ 64x256 product
//! (one step of a recurrent cell) costs it more in packing and dispatch than
//! in multiply-adds, and ten times more when the right operand is a
//! transposed weight (`x @ w.t()`, every `linear`). Here a register tile of
//! `MR` rows by `NR` columns is updated straight from the operands, one
//! broadcast element of `a` per row and one contiguous row of `b` per step
//! of `k`. `b` must have unit column stride; a transposed `b` is handled by
//! computing `c^T = b^T @ a^T` instead, with the few rows of `a` packed into
//! a contiguous panel (the vector side), when `m` is small.
//!
//! Each output element is one chain of fused multiply-adds over `k` in order,
//! then added to the destination when accumulating, so the result does not
//! depend on the tiling or on which operand is vectorised. The products run
//! on the calling thread: at a few microseconds each, the pool's helper
//! wakes too late to take a share (measured: no gain on two cores).

#[cfg(target_arch = "x86_64")]
mod pairs;

use super::matmul::{Dst, Mat};
use crate::tensor::{DType, Element};

/// Products of at most this many multiply-adds take the register-tile path.
const SMALL_WORK: usize = 1 << 18;
/// The transposed form vectorises over `m`; wider than this and the gemm
/// crate's packing pays for itself.
const MAX_VECTOR_M: usize = 32;
/// Rows per register tile.
const MR: usize = 8;
/// Rows per two-register tile with AVX2 (see [`tile_width`]).
const AVX2_ROWS: usize = 6;

/// The element types the tiles run on.
pub(crate) trait Fma: Element + TileKernel {
    /// `self * a + b`, rounded once.
    fn fma(self, a: Self, b: Self) -> Self;
    fn add(self, b: Self) -> Self;
}

impl Fma for f32 {
    #[inline(always)]
    fn fma(self, a: f32, b: f32) -> f32 {
        f32::mul_add(self, a, b)
    }
    #[inline(always)]
    fn add(self, b: f32) -> f32 {
        self + b
    }
}

impl Fma for f64 {
    #[inline(always)]
    fn fma(self, a: f64, b: f64) -> f64 {
        f64::mul_add(self, a, b)
    }
    #[inline(always)]
    fn add(self, b: f64) -> f64 {
        self + b
    }
}

/// Runs `dst (+)= a @ b` here when the product is small and its layout suits
/// the tiles; returns false (having done nothing) otherwise.
///
/// # Safety
/// As [`super::matmul::gemm_into`]: valid strided operands and destination.
pub(crate) unsafe fn try_run<T: Element>(a: Mat<T>, b: Mat<T>, dst: Dst<T>) -> bool {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if m * n * k > SMALL_WORK {
        return false;
    }
    match T::DTYPE {
        DType::F32 => route::<f32>(cast(a), cast(b), cast_dst(dst)),
        DType::F64 => route::<f64>(cast(a), cast(b), cast_dst(dst)),
        _ => false,
    }
}

fn cast<T, U>(a: Mat<T>) -> Mat<U> {
    Mat {
        ptr: a.ptr as *const U,
        rows: a.rows,
        cols: a.cols,
        row_stride: a.row_stride,
        col_stride: a.col_stride,
    }
}

fn cast_dst<T, U>(d: Dst<T>) -> Dst<U> {
    Dst {
        ptr: d.ptr as *mut U,
        rs: d.rs,
        cs: d.cs,
        add: d.add,
    }
}

unsafe fn route<T: Fma>(a: Mat<T>, b: Mat<T>, dst: Dst<T>) -> bool {
    route_on(isa(), a, b, dst)
}

unsafe fn route_on<T: Fma>(isa: Isa, a: Mat<T>, b: Mat<T>, dst: Dst<T>) -> bool {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    if (b.col_stride == 1 || n == 1) && pads_cheaply::<T>(isa, m, n) {
        rows(isa, a, b.ptr, b.row_stride, n, dst);
        return true;
    }
    // The pair kernel's panel holds 8 elements per step of `k`.
    #[cfg(target_arch = "x86_64")]
    if T::DTYPE == DType::F32
        && isa == Isa::Avx512
        && b.row_stride == 1
        && m <= pairs::MAX_M
        && m * n >= 8
    {
        pairs::run(cast(a), b.ptr as *const f32, b.col_stride, n, cast_dst(dst));
        return true;
    }
    if (b.row_stride == 1 || k == 1) && m <= MAX_VECTOR_M && pads_cheaply::<T>(isa, n, m) {
        // c^T[n, m] = b^T[n, k] @ a^T[k, m], with a^T packed contiguous.
        let mut panel = crate::error::filled_vec(k * m, T::zero());
        for i in 0..m {
            for p in 0..k {
                panel[p * m + i] = *a.ptr.add(i * a.row_stride + p * a.col_stride);
            }
        }
        let bt = Mat {
            ptr: b.ptr,
            rows: n,
            cols: k,
            row_stride: b.col_stride,
            col_stride: b.row_stride,
        };
        let dt = Dst {
            ptr: dst.ptr,
            rs: dst.cs,
            cs: dst.rs,
            add: dst.add,
        };
        rows(isa, bt, panel.as_ptr(), m, m, dt);
        return true;
    }
    false
}

/// The column tile width [`rows`] uses for `n` columns: one, two or four
/// 256-bit registers, the narrowest that covers `n`; at most two with AVX2,
/// whose 16 vector registers hold 6 rows of a two-register tile but not the
/// 32 accumulators of 8 rows of a four-register one (those spilled to the
/// stack on every multiply-add and ran at a quarter of the core's rate).
fn tile_width<T>(isa: Isa, n: usize) -> usize {
    let lanes = 32 / std::mem::size_of::<T>();
    if n <= lanes {
        lanes
    } else if n <= 2 * lanes || isa == Isa::Avx2 {
        2 * lanes
    } else {
        4 * lanes
    }
}

/// Whether the zero-padded copy of a partial column tile (`k` rows of the
/// tile's width) costs no more than the `m * n * k` multiply-adds: a
/// matrix-vector shape with a long `k` would spend its time copying.
fn pads_cheaply<T>(isa: Isa, m: usize, n: usize) -> bool {
    let w = tile_width::<T>(isa, n);
    n.is_multiple_of(w) || w <= m * n
}

/// `dst (+)= a @ b` where row `p` of `b` is the `n` contiguous elements at
/// `b + p * ldb`, in column tiles of `width` elements (8, 16 or 32 for
/// float32, half that for float64), the narrowest that covers `n`, so a
/// narrow product (the transposed form's `m` columns) computes no padding.
unsafe fn rows<T: Fma>(isa: Isa, a: Mat<T>, b: *const T, ldb: usize, n: usize, dst: Dst<T>) {
    let width = tile_width::<T>(isa, n);
    let (m, k) = (a.rows, a.cols);
    let full = n / width * width;
    // The last, partial column tile reads a zero-padded copy of its columns.
    let mut edge = Vec::new();
    if full < n {
        edge = crate::error::filled_vec(k * width, T::zero());
        for p in 0..k {
            for j in full..n {
                edge[p * width + j - full] = *b.add(p * ldb + j);
            }
        }
    }
    let col_tiles = n.div_ceil(width);
    let tile = |i0: usize, i1: usize, j0: usize| {
        let (panel, ld, cols) = if j0 < full {
            (b.add(j0), ldb, width)
        } else {
            (edge.as_ptr(), width, n - full)
        };
        let mut i0 = i0;
        while i0 < i1 {
            let t = Tile {
                a: a.ptr.add(i0 * a.row_stride),
                rsa: a.row_stride,
                csa: a.col_stride,
                b: panel,
                ldb: ld,
                k,
                dst: dst.ptr.add(i0 * dst.rs + j0 * dst.cs),
                rsd: dst.rs,
                csd: dst.cs,
                cols,
                add: dst.add,
            };
            i0 += T::tile(isa, &t, i1 - i0, width);
        }
    };
    for c in 0..col_tiles {
        tile(0, m, c * width);
    }
}

/// One register tile's operands: rows of `a` from `a`, `k` rows of `b`
/// (`width` readable elements each, `ldb` apart), and where its `cols`
/// valid columns go.
pub(crate) struct Tile<T> {
    a: *const T,
    rsa: usize,
    csa: usize,
    b: *const T,
    ldb: usize,
    k: usize,
    dst: *mut T,
    rsd: usize,
    csd: usize,
    cols: usize,
    add: bool,
}

impl<T: Fma> Tile<T> {
    /// Writes (or adds) the accumulated `R x width` block held in `acc`.
    #[inline(always)]
    unsafe fn store<const R: usize>(&self, acc: &[[T; 32]; R]) {
        for (r, acc_row) in acc.iter().enumerate() {
            let row = self.dst.add(r * self.rsd);
            for (jj, v) in acc_row.iter().enumerate().take(self.cols) {
                let at = row.add(jj * self.csd);
                *at = if self.add { (*at).add(*v) } else { *v };
            }
        }
    }

    /// Portable form of the tile for machines without AVX2: the same chain
    /// of fused multiply-adds per element, so the same results.
    unsafe fn run_scalar<const R: usize>(&self, width: usize) -> usize {
        let mut acc = [[T::zero(); 32]; R];
        for p in 0..self.k {
            let brow = self.b.add(p * self.ldb);
            for (r, acc_row) in acc.iter_mut().enumerate() {
                let x = *self.a.add(r * self.rsa + p * self.csa);
                for (jj, s) in acc_row.iter_mut().enumerate().take(width) {
                    *s = x.fma(*brow.add(jj), *s);
                }
            }
        }
        self.store(&acc);
        R
    }
}

/// Picks the row count of the next tile: `MR` (or the `top` given first,
/// when the tile's registers allow fewer rows), or fewer at the bottom edge.
macro_rules! by_rows {
    ($left:expr, $f:ident :: <_ $(, $g:tt)*> ($($arg:expr),*)) => {
        by_rows!(MR; $left, $f::<_ $(, $g)*>($($arg),*))
    };
    ($top:expr; $left:expr, $f:ident :: <_ $(, $g:tt)*> ($($arg:expr),*)) => {
        if $left >= $top {
            $f::<{ $top } $(, $g)*>($($arg),*)
        } else if $left >= 4 {
            $f::<4 $(, $g)*>($($arg),*)
        } else if $left >= 2 {
            $f::<2 $(, $g)*>($($arg),*)
        } else {
            $f::<1 $(, $g)*>($($arg),*)
        }
    };
}

/// A tile kernel over one vector register kind: `R` rows by `NV` registers
/// of accumulators, one broadcast of `a` per row and `NV` loads of `b` per
/// step of `k`. Written with intrinsics because the compiler does not keep a
/// generic accumulator array in vector registers.
macro_rules! vector_tile {
    ($name:ident, $t:ty, $v:ty, $lanes:expr, $feat:literal,
     $zero:ident, $load:ident, $set1:ident, $fma:ident, $add:ident, $store:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feat)]
        unsafe fn $name<const R: usize, const NV: usize>(t: &Tile<$t>) -> usize {
            use std::arch::x86_64::*;
            let mut acc: [[$v; NV]; R] = [[$zero(); NV]; R];
            for p in 0..t.k {
                let brow = t.b.add(p * t.ldb);
                let mut bv: [$v; NV] = [$zero(); NV];
                for (v, slot) in bv.iter_mut().enumerate() {
                    *slot = $load(brow.add(v * $lanes));
                }
                for (r, acc_row) in acc.iter_mut().enumerate() {
                    let x = $set1(*t.a.add(r * t.rsa + p * t.csa));
                    for (slot, bvv) in acc_row.iter_mut().zip(bv.iter()) {
                        *slot = $fma(x, *bvv, *slot);
                    }
                }
            }
            if t.csd == 1 && t.cols == NV * $lanes {
                // Whole rows of a row-major destination: vector stores.
                for (r, acc_row) in acc.iter().enumerate() {
                    let row = t.dst.add(r * t.rsd);
                    for (v, reg) in acc_row.iter().enumerate() {
                        let at = row.add(v * $lanes);
                        let val = if t.add { $add($load(at), *reg) } else { *reg };
                        $store(at, val);
                    }
                }
                return R;
            }
            let mut out = [[0.0 as $t; 32]; R];
            for (o, acc_row) in out.iter_mut().zip(acc.iter()) {
                for (v, reg) in acc_row.iter().enumerate() {
                    $store(o.as_mut_ptr().add(v * $lanes), *reg);
                }
            }
            t.store(&out);
            R
        }
    };
}

vector_tile!(
    f32_ymm,
    f32,
    __m256,
    8,
    "avx2,fma",
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    _mm256_add_ps,
    _mm256_storeu_ps
);
vector_tile!(
    f32_zmm,
    f32,
    __m512,
    16,
    "avx512f",
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_add_ps,
    _mm512_storeu_ps
);
vector_tile!(
    f64_ymm,
    f64,
    __m256d,
    4,
    "avx2,fma",
    _mm256_setzero_pd,
    _mm256_loadu_pd,
    _mm256_set1_pd,
    _mm256_fmadd_pd,
    _mm256_add_pd,
    _mm256_storeu_pd
);
vector_tile!(
    f64_zmm,
    f64,
    __m512d,
    8,
    "avx512f",
    _mm512_setzero_pd,
    _mm512_loadu_pd,
    _mm512_set1_pd,
    _mm512_fmadd_pd,
    _mm512_add_pd,
    _mm512_storeu_pd
);

// The tiles use the elementwise loops' probe, so `FERROGRAD_ISA` caps them too.
pub(crate) use super::vmath::{isa, Isa};

/// Per element type: run one tile of at most `left` rows and `width`
/// columns, returning the rows it covered.
pub(crate) trait TileKernel: Sized {
    unsafe fn tile(isa: Isa, t: &Tile<Self>, left: usize, width: usize) -> usize;
}

/// The dispatch of one element type: `$ymm`/`$zmm` are its 256- and 512-bit
/// tile kernels, `$l` the lanes of a 256-bit register. The narrowest tile
/// that covers the width: one or two 256-bit registers (the widest without
/// AVX-512), or one or two 512-bit ones.
macro_rules! tile_kernel {
    ($t:ty, $ymm:ident, $zmm:ident, $l:expr) => {
        impl TileKernel for $t {
            unsafe fn tile(isa: Isa, t: &Tile<$t>, left: usize, width: usize) -> usize {
                #[cfg(target_arch = "x86_64")]
                match (isa, width) {
                    (Isa::Avx512 | Isa::Avx2, w) if w == $l => {
                        return by_rows!(left, $ymm::<_, 1>(t))
                    }
                    (Isa::Avx512, w) if w == 2 * $l => return by_rows!(left, $zmm::<_, 1>(t)),
                    (Isa::Avx512, _) => return by_rows!(left, $zmm::<_, 2>(t)),
                    // 12 accumulators, two loads of `b` and a broadcast.
                    (Isa::Avx2, w) if w == 2 * $l => {
                        return by_rows!(AVX2_ROWS; left, $ymm::<_, 2>(t))
                    }
                    (Isa::Avx2 | Isa::Portable, _) => {}
                }
                scalar(t, left, width)
            }
        }
    };
}

tile_kernel!(f32, f32_ymm, f32_zmm, 8);
tile_kernel!(f64, f64_ymm, f64_zmm, 4);

unsafe fn scalar<T: Fma>(t: &Tile<T>, left: usize, width: usize) -> usize {
    if left >= MR {
        t.run_scalar::<MR>(width)
    } else if left >= 4 {
        t.run_scalar::<4>(width)
    } else if left >= 2 {
        t.run_scalar::<2>(width)
    } else {
        t.run_scalar::<1>(width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each element as one in-order chain of fused multiply-adds, the order
    /// the tiles promise whatever their shape.
    fn chain<T: Fma>(a: &Mat<T>, b: &Mat<T>, i: usize, j: usize) -> T {
        let mut s = T::zero();
        for p in 0..a.cols {
            // SAFETY: inside the test's buffers.
            unsafe {
                let x = *a.ptr.add(i * a.row_stride + p * a.col_stride);
                let y = *b.ptr.add(p * b.row_stride + j * b.col_stride);
                s = x.fma(y, s);
            }
        }
        s
    }

    /// Every instruction set this machine has must give the same bits.
    fn isas() -> Vec<Isa> {
        match crate::kernels::vmath::detected() {
            Isa::Avx512 => vec![Isa::Avx512, Isa::Avx2, Isa::Portable],
            Isa::Avx2 => vec![Isa::Avx2, Isa::Portable],
            Isa::Portable => vec![Isa::Portable],
        }
    }

    /// The paired kernel's order: the chain over even `k` plus the chain
    /// over odd `k` (which takes a zero product when `k` is odd).
    fn pair_chains<T: Fma>(a: &Mat<T>, b: &Mat<T>, i: usize, j: usize) -> T {
        let (mut even, mut odd) = (T::zero(), T::zero());
        for p in 0..a.cols {
            // SAFETY: inside the test's buffers.
            unsafe {
                let x = *a.ptr.add(i * a.row_stride + p * a.col_stride);
                let y = *b.ptr.add(p * b.row_stride + j * b.col_stride);
                if p % 2 == 0 {
                    even = x.fma(y, even);
                } else {
                    odd = x.fma(y, odd);
                }
            }
        }
        if a.cols % 2 == 1 {
            odd = T::zero().fma(T::zero(), odd);
        }
        even.add(odd)
    }

    fn check<T: Fma + std::fmt::Debug>(conv: impl Fn(f64) -> T) {
        for isa in isas() {
            check_on(isa, &conv);
        }
    }

    fn check_on<T: Fma + std::fmt::Debug>(isa: Isa, conv: impl Fn(f64) -> T) {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f64 / (1u64 << 31) as f64) - 0.5
        };
        for &(m, k, n) in &[
            (8, 64, 256),
            (7, 63, 21),
            (8, 1, 9),
            (2, 5, 300),
            (1, 1, 1),
            (3, 5, 7),
            (9, 17, 33),
            (17, 3, 40),
            (32, 20, 8),
            (256, 8, 64),
            (5, 30, 1),
            (1, 3000, 1),
            (2, 700, 3),
            (31, 9, 19),
        ] {
            let av: Vec<T> = (0..m * k).map(|_| conv(next())).collect();
            let bv: Vec<T> = (0..k * n).map(|_| conv(next())).collect();
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let a = Mat {
                    ptr: av.as_ptr(),
                    rows: m,
                    cols: k,
                    row_stride: if ta { 1 } else { k },
                    col_stride: if ta { m } else { 1 },
                };
                let b = Mat {
                    ptr: bv.as_ptr(),
                    rows: k,
                    cols: n,
                    row_stride: if tb { 1 } else { n },
                    col_stride: if tb { k } else { 1 },
                };
                for add in [false, true] {
                    let init: Vec<T> = (0..m * n).map(|_| conv(next())).collect();
                    let mut out = init.clone();
                    let dst = Dst {
                        ptr: out.as_mut_ptr(),
                        rs: n,
                        cs: 1,
                        add,
                    };
                    // SAFETY: the buffers match the descriptors.
                    let ran = unsafe { route_on(isa, a, b, dst) };
                    if (m, k, n) == (8, 64, 256) {
                        assert!(ran, "{isa:?} {ta} {tb}");
                    }
                    if !ran {
                        continue;
                    }
                    let paired = isa == Isa::Avx512
                        && T::DTYPE == DType::F32
                        && !((b.col_stride == 1 || n == 1) && pads_cheaply::<T>(isa, m, n))
                        && b.row_stride == 1
                        && m <= 8
                        && m * n >= 8;
                    for i in 0..m {
                        for j in 0..n {
                            let c = if paired {
                                pair_chains(&a, &b, i, j)
                            } else {
                                chain(&a, &b, i, j)
                            };
                            let want = if add { init[i * n + j].add(c) } else { c };
                            assert_eq!(
                                out[i * n + j],
                                want,
                                "{isa:?} {m}x{k}x{n} {ta} {tb} {add} at {i},{j}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn tiles_match_one_fma_chain_per_element_f32() {
        check::<f32>(|v| v as f32);
    }

    #[test]
    fn tiles_match_one_fma_chain_per_element_f64() {
        check::<f64>(|v| v);
    }
}
