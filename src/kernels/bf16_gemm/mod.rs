//! bfloat16 matrix products with float32 accumulation:
//! `C = alpha * A @ B + beta * C` for bfloat16 `A` and `B` (held as `u16`
//! bit patterns) and a float32 or bfloat16 `C`, every operand with its own
//! row and column strides (so `x @ w.t()` and `g.t() @ x` need no copy).
//!
//! Three paths, chosen at run time ([`Path::best`]):
//!
//! * [`Path::Amx`]: Intel AMX tiles (`tdpbf16ps`: a 16x32 by 32x16 product
//!   per instruction), on Sapphire Rapids and later;
//! * [`Path::Avx512Bf16`]: `vdpbf16ps`, which adds two bfloat16 products
//!   into each float32 lane, on AMD Zen 4/5 and Intel Cooper Lake and later;
//! * [`Path::Portable`]: the operands widened to float32 (exact) and
//!   multiplied by the float32 GEMM, anywhere.
//!
//! The two instruction paths share one blocked driver (`driver.rs`): `B` is
//! packed a block of `KC` rows by `NC` columns at a time into panels where
//! each pair of `k` steps of a column sits in one 32-bit word (the layout
//! both instructions read), `A` a block of `MC` rows at a time into panels
//! of the kernel's register tile, and the tiles walk the blocks. Each
//! output element is one chain of float32 additions over `k` in order
//! (continued across `k` blocks), then scaled: `alpha * sum + beta * c`.
//!
//! # Accuracy
//!
//! A product of two bfloat16 values is exact in float32, so the only
//! rounding is in the sums. With `u = 2^-24` and `g(n) = n u / (1 - n u)`,
//! every path returns, for each element,
//!
//! ```text
//! |C - C_exact| <= g(k + ceil(k / 64) + 3) * (|alpha| sum_p |a_ip b_pj| + |beta c_ij|)
//!                  + (|alpha| + 1) (k + 3) 2^-126
//! ```
//!
//! where `C_exact` is the exact value of the bfloat16 inputs (the first term
//! is the classical bound for `k` float32 additions, plus one per block the
//! float32 GEMM of the portable path splits `k` into, plus the scaling).
//! The last term covers the instructions' flushing of float32 subnormal
//! partial sums to zero. Both instructions also read bfloat16 subnormal
//! inputs (below 2^-126 in magnitude) as zero, which changes a result by at
//! most `|alpha| sum |a_ip b_pj|` over the terms with such an input;
//! `tests.rs` checks this bound on every path. A bfloat16 `C` is the float32
//! result rounded once to nearest even ([`convert::f32_to_bf16`]).
//!
//! NaN and infinity propagate as in float32 arithmetic: a NaN input or an
//! `inf * 0` product makes its output elements NaN, a product or sum beyond
//! float32's range gives infinity (with the subnormal exception above:
//! `inf * subnormal` is NaN). As in BLAS, `beta == 0` means `C` is not read
//! (a NaN there does not propagate), and `alpha == 0` or `k == 0` means `A`
//! and `B` are not read.

pub mod convert;

#[cfg(target_arch = "x86_64")]
mod amx;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod driver;
mod pack;
mod portable;
#[cfg(test)]
mod tests;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

pub use convert::{bf16_to_f32, bf16_to_f32_slice, f32_to_bf16, f32_to_bf16_slice};

/// A read-only matrix: element `(i, j)` at `ptr + i * rs + j * cs`.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a, T> {
    ptr: *const T,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
    _data: PhantomData<&'a [T]>,
}

// SAFETY: a shared view of `T`s, as `&[T]` is.
unsafe impl<T: Sync> Send for MatRef<'_, T> {}
unsafe impl<T: Sync> Sync for MatRef<'_, T> {}

/// The index one past the last element a `rows x cols` view with strides
/// `rs`, `cs` touches (0 for an empty view).
fn extent(rows: usize, cols: usize, rs: usize, cs: usize) -> usize {
    if rows == 0 || cols == 0 {
        0
    } else {
        (rows - 1) * rs + (cols - 1) * cs + 1
    }
}

impl<'a, T> MatRef<'a, T> {
    /// A strided view of `data`.
    ///
    /// # Panics
    /// If an element lies outside `data`.
    pub fn new(data: &'a [T], rows: usize, cols: usize, rs: usize, cs: usize) -> Self {
        assert!(
            extent(rows, cols, rs, cs) <= data.len(),
            "MatRef: a {rows}x{cols} view with strides ({rs}, {cs}) reaches past {} elements",
            data.len()
        );
        MatRef {
            ptr: data.as_ptr(),
            rows,
            cols,
            rs,
            cs,
            _data: PhantomData,
        }
    }

    /// `data` as a row-major `rows x cols` matrix.
    pub fn row_major(data: &'a [T], rows: usize, cols: usize) -> Self {
        Self::new(data, rows, cols, cols, 1)
    }

    /// A view of raw memory.
    ///
    /// # Safety
    /// Every element must be readable for `'a`.
    pub unsafe fn from_raw(ptr: *const T, rows: usize, cols: usize, rs: usize, cs: usize) -> Self {
        MatRef {
            ptr,
            rows,
            cols,
            rs,
            cs,
            _data: PhantomData,
        }
    }

    /// The transpose (a view: strides swapped).
    pub fn t(self) -> Self {
        MatRef {
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Element `(i, j)`.
    ///
    /// # Safety
    /// `i < rows`, `j < cols`.
    #[inline(always)]
    pub(crate) unsafe fn at(&self, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        *self.ptr.add(i * self.rs + j * self.cs)
    }
}

/// A writable matrix: element `(i, j)` at `ptr + i * rs + j * cs`, no two
/// elements at the same place.
#[derive(Debug)]
pub struct MatMut<'a, T> {
    ptr: *mut T,
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
    _data: PhantomData<&'a mut [T]>,
}

// SAFETY: an exclusive view of `T`s, as `&mut [T]` is.
unsafe impl<T: Send> Send for MatMut<'_, T> {}
unsafe impl<T: Sync> Sync for MatMut<'_, T> {}

impl<'a, T> MatMut<'a, T> {
    /// A strided view of `data`.
    ///
    /// # Panics
    /// If an element lies outside `data`, or if the strides could map two
    /// elements to one place (one dimension's whole span must fit inside
    /// the other's stride).
    pub fn new(data: &'a mut [T], rows: usize, cols: usize, rs: usize, cs: usize) -> Self {
        assert!(
            extent(rows, cols, rs, cs) <= data.len(),
            "MatMut: a {rows}x{cols} view with strides ({rs}, {cs}) reaches past {} elements",
            data.len()
        );
        let distinct = rows == 0
            || cols == 0
            || (rows == 1 || rs >= 1)
                && (cols == 1 || cs >= 1)
                && (rows == 1 || cols == 1 || rs > (cols - 1) * cs || cs > (rows - 1) * rs);
        assert!(
            distinct,
            "MatMut: strides ({rs}, {cs}) map two elements of a {rows}x{cols} view to one place"
        );
        MatMut {
            ptr: data.as_mut_ptr(),
            rows,
            cols,
            rs,
            cs,
            _data: PhantomData,
        }
    }

    /// `data` as a row-major `rows x cols` matrix.
    pub fn row_major(data: &'a mut [T], rows: usize, cols: usize) -> Self {
        Self::new(data, rows, cols, cols, 1)
    }

    /// A view of raw memory.
    ///
    /// # Safety
    /// Every element must be readable and writable, by this view alone,
    /// for `'a`, and no two elements may share a place.
    pub unsafe fn from_raw(ptr: *mut T, rows: usize, cols: usize, rs: usize, cs: usize) -> Self {
        MatMut {
            ptr,
            rows,
            cols,
            rs,
            cs,
            _data: PhantomData,
        }
    }

    /// The transpose (a view: strides swapped).
    pub fn t(self) -> Self {
        MatMut {
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }
}

/// The destination of a product: float32, or bfloat16 rounded once.
#[derive(Debug)]
pub enum Out<'a> {
    F32(MatMut<'a, f32>),
    Bf16(MatMut<'a, u16>),
}

impl Out<'_> {
    fn shape(&self) -> (usize, usize) {
        match self {
            Out::F32(c) => (c.rows, c.cols),
            Out::Bf16(c) => (c.rows, c.cols),
        }
    }
}

/// The ways a product can be computed. Every path gives results within the
/// bound in the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// Widen to float32 and use the float32 GEMM.
    Portable,
    /// `vdpbf16ps` register tiles.
    Avx512Bf16,
    /// AMX `tdpbf16ps` tiles.
    Amx,
}

impl Path {
    /// The paths, slowest first.
    pub const ALL: [Path; 3] = [Path::Portable, Path::Avx512Bf16, Path::Amx];

    /// Whether this CPU (and, for AMX, the OS) can run the path.
    pub fn available(self) -> bool {
        match self {
            Path::Portable => true,
            Path::Avx512Bf16 => has_avx512_bf16(),
            Path::Amx => has_amx(),
        }
    }

    /// The path's name (what `FERROGRAD_BF16_GEMM` and the Python switch take).
    pub fn name(self) -> &'static str {
        match self {
            Path::Portable => "portable",
            Path::Avx512Bf16 => "avx512_bf16",
            Path::Amx => "amx",
        }
    }

    /// The path with this name (case and surrounding blanks ignored).
    pub fn from_name(name: &str) -> Option<Path> {
        match name.trim().to_ascii_lowercase().as_str() {
            "portable" => Some(Path::Portable),
            "avx512_bf16" | "avx512bf16" | "avx512" => Some(Path::Avx512Bf16),
            "amx" => Some(Path::Amx),
            _ => None,
        }
    }

    /// The fastest available path, unless the `FERROGRAD_BF16_GEMM`
    /// environment variable (`portable`, `avx512_bf16` or `amx`, read once)
    /// names another available one.
    pub fn best() -> Path {
        static BEST: OnceLock<Path> = OnceLock::new();
        *BEST.get_or_init(|| {
            let named = std::env::var("FERROGRAD_BF16_GEMM")
                .ok()
                .and_then(|v| Path::from_name(&v));
            match named {
                Some(p) if p.available() => p,
                _ => *Path::ALL.iter().rev().find(|p| p.available()).unwrap(),
            }
        })
    }

    /// The path products take now: the one [`force`] chose, else [`Path::best`].
    pub fn current() -> Path {
        match FORCED.load(Ordering::Relaxed) {
            0 => Path::best(),
            i => Path::ALL[i as usize - 1],
        }
    }
}

/// 0: no path forced; `i`: `Path::ALL[i - 1]`.
static FORCED: AtomicU8 = AtomicU8::new(0);

/// Makes every later product take `path` (`None`: the best one again), so
/// tests can check each path this CPU runs.
///
/// # Errors
/// If the path cannot run here (nothing changes).
pub fn force(path: Option<Path>) -> Result<(), String> {
    let code = match path {
        None => 0,
        Some(p) if p.available() => Path::ALL.iter().position(|&q| q == p).unwrap() as u8 + 1,
        Some(p) => {
            return Err(format!(
                "the {} bfloat16 matmul path is not available on this CPU",
                p.name()
            ))
        }
    };
    FORCED.store(code, Ordering::Relaxed);
    Ok(())
}

/// Whether the CPU has AVX512_BF16 (and the AVX-512 subsets the kernels use).
pub(crate) fn has_avx512_bf16() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vl")
                && is_x86_feature_detected!("avx512dq")
                && is_x86_feature_detected!("avx512bf16")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    })
}

/// Whether AMX-BF16 tiles can run here (CPU, OS support, and this
/// process's permission, requested on the first call).
pub(crate) fn has_amx() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx512_bf16() && amx::enable()
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// `c = alpha * a @ b + beta * c` in float32, on [`Path::current`] and the
/// thread pool.
///
/// # Panics
/// If the shapes do not chain (`a` is `m x k`, `b` is `k x n`, `c` is `m x n`).
pub fn gemm_bf16(a: MatRef<u16>, b: MatRef<u16>, c: MatMut<f32>, alpha: f32, beta: f32) {
    gemm_bf16_with(Path::current(), true, a, b, Out::F32(c), alpha, beta)
}

/// `c = bf16(alpha * a @ b + beta * c)`: computed in float32 and rounded
/// once to nearest even.
///
/// # Panics
/// As [`gemm_bf16`].
pub fn gemm_bf16_to_bf16(a: MatRef<u16>, b: MatRef<u16>, c: MatMut<u16>, alpha: f32, beta: f32) {
    gemm_bf16_with(Path::current(), true, a, b, Out::Bf16(c), alpha, beta)
}

/// The product on a given path; `parallel` lets it use the thread pool
/// (it stays on the calling thread when called from a pool task anyway).
///
/// # Panics
/// As [`gemm_bf16`], and if the path is not [`available`](Path::available).
pub fn gemm_bf16_with(
    path: Path,
    parallel: bool,
    a: MatRef<u16>,
    b: MatRef<u16>,
    c: Out,
    alpha: f32,
    beta: f32,
) {
    let (m, n) = c.shape();
    assert!(
        a.rows == m && b.cols == n && a.cols == b.rows,
        "gemm_bf16: shapes {}x{} @ {}x{} -> {m}x{n} do not chain",
        a.rows,
        a.cols,
        b.rows,
        b.cols
    );
    assert!(
        path.available(),
        "gemm_bf16: the {path:?} path is not available on this CPU"
    );
    if m == 0 || n == 0 {
        return;
    }
    if a.cols == 0 || alpha == 0.0 {
        scale(c, beta);
        return;
    }
    // SAFETY: the views are valid (their constructors' contracts) and the
    // shapes chain; the path's instructions were detected.
    unsafe {
        match path {
            Path::Portable => portable::gemm(a, b, c, alpha, beta, parallel),
            #[cfg(target_arch = "x86_64")]
            Path::Avx512Bf16 => driver::gemm::<avx512::Kernel>(a, b, c, alpha, beta, parallel),
            #[cfg(target_arch = "x86_64")]
            Path::Amx => driver::gemm::<amx::Kernel>(a, b, c, alpha, beta, parallel),
            #[cfg(not(target_arch = "x86_64"))]
            _ => unreachable!(),
        }
    }
}

/// `c = beta * c` (zero when `beta == 0`, without reading `c`): the whole
/// product when it has no terms.
fn scale(c: Out, beta: f32) {
    fn each<T: Copy>(c: &MatMut<T>, f: impl Fn(T) -> T) {
        for i in 0..c.rows {
            for j in 0..c.cols {
                // SAFETY: inside the view.
                unsafe {
                    let p = c.ptr.add(i * c.rs + j * c.cs);
                    *p = f(*p);
                }
            }
        }
    }
    match c {
        Out::F32(c) => each(&c, |x| if beta == 0.0 { 0.0 } else { beta * x }),
        Out::Bf16(c) => each(&c, |x| {
            if beta == 0.0 {
                0
            } else {
                f32_to_bf16(beta * bf16_to_f32(x))
            }
        }),
    }
}

/// `out = alpha * acc + beta * c` (each operation rounded; `c` unread when
/// `beta == 0`): how every path finishes an element, so a bfloat16 result
/// is exactly the rounded float32 one.
#[inline(always)]
pub(crate) fn finish(acc: f32, c: f32, alpha: f32, beta: f32) -> f32 {
    let v = if alpha == 1.0 { acc } else { alpha * acc };
    if beta == 0.0 {
        v
    } else {
        v + beta * c
    }
}
