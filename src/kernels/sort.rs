//! Sorting and selection along contiguous rows: `sort`/`argsort` by an LSD
//! radix sort of order-preserving integer keys (stable, so equal elements
//! keep their order, as PyTorch's stable sort does), and `topk`/`kthvalue`/
//! `median` by selection (`select_nth_unstable`) and a sort of only the `k`
//! chosen, instead of a full sort.
//!
//! Every element maps to an unsigned key whose integer order is PyTorch's
//! order: NaN above every number (all NaNs equal), `-0.0` equal to `0.0`.
//! A key paired with the element's position gives a strict order, so
//! selection and sorting give the same positions as a stable sort would.

use half::{bf16, f16};

use super::copy::par_units;
use super::SendPtr;
use crate::tensor::Element;

/// An unsigned key: 32 bits for elements up to 32 bits, 64 for the rest.
pub trait Key: Copy + Ord + Send + Sync + Default {
    const BYTES: usize;
    fn byte(self, i: usize) -> usize;
    /// The key that sorts in the opposite order.
    fn reverse(self) -> Self;
}

impl Key for u32 {
    const BYTES: usize = 4;
    #[inline(always)]
    fn byte(self, i: usize) -> usize {
        ((self >> (8 * i)) & 0xff) as usize
    }
    #[inline(always)]
    fn reverse(self) -> Self {
        !self
    }
}

impl Key for u64 {
    const BYTES: usize = 8;
    #[inline(always)]
    fn byte(self, i: usize) -> usize {
        ((self >> (8 * i)) & 0xff) as usize
    }
    #[inline(always)]
    fn reverse(self) -> Self {
        !self
    }
}

/// Elements with an order-preserving key.
pub trait SortKey: Element {
    type K: Key;
    fn key(self) -> Self::K;
}

#[inline(always)]
fn f32_key(x: f32) -> u32 {
    if x.is_nan() {
        return u32::MAX;
    }
    // -0.0 and 0.0 compare equal: one key for both.
    let b = if x == 0.0 { 0 } else { x.to_bits() };
    if b >> 31 == 1 {
        !b
    } else {
        b | 0x8000_0000
    }
}

#[inline(always)]
fn f64_key(x: f64) -> u64 {
    if x.is_nan() {
        return u64::MAX;
    }
    let b = if x == 0.0 { 0 } else { x.to_bits() };
    if b >> 63 == 1 {
        !b
    } else {
        b | 0x8000_0000_0000_0000
    }
}

macro_rules! int_key {
    ($($t:ty => $k:ty, $w:ty, $flip:expr);* $(;)?) => {$(
        impl SortKey for $t {
            type K = $k;
            #[inline(always)]
            fn key(self) -> $k {
                (self as $w as $k) ^ $flip
            }
        }
    )*};
}

int_key! {
    u8 => u32, u32, 0;
    i8 => u32, i32, 0x8000_0000;
    i16 => u32, i32, 0x8000_0000;
    i32 => u32, i32, 0x8000_0000;
    i64 => u64, i64, 0x8000_0000_0000_0000;
}

impl SortKey for bool {
    type K = u32;
    #[inline(always)]
    fn key(self) -> u32 {
        self as u32
    }
}

impl SortKey for f32 {
    type K = u32;
    #[inline(always)]
    fn key(self) -> u32 {
        f32_key(self)
    }
}

impl SortKey for f64 {
    type K = u64;
    #[inline(always)]
    fn key(self) -> u64 {
        f64_key(self)
    }
}

impl SortKey for f16 {
    type K = u32;
    #[inline(always)]
    fn key(self) -> u32 {
        f32_key(self.to_f32())
    }
}

impl SortKey for bf16 {
    type K = u32;
    #[inline(always)]
    fn key(self) -> u32 {
        f32_key(self.to_f32())
    }
}

/// Rows at most this long sort by comparison of (key, position) pairs; longer
/// ones by radix passes.
const SMALL: usize = 64;

/// Sorts `keys` (with their positions `pos`) ascending, stably, using
/// `tk`/`tp` as scratch of the same length. One byte per pass, least
/// significant first; a pass where every key has the same byte is skipped.
fn radix_sort<K: Key>(keys: &mut Vec<K>, pos: &mut Vec<u32>, tk: &mut Vec<K>, tp: &mut Vec<u32>) {
    let n = keys.len();
    if n <= SMALL {
        let mut pairs: Vec<(K, u32)> = keys.iter().copied().zip(pos.iter().copied()).collect();
        pairs.sort_unstable();
        for (i, (k, p)) in pairs.into_iter().enumerate() {
            keys[i] = k;
            pos[i] = p;
        }
        return;
    }
    let mut counts = vec![[0u32; 256]; K::BYTES];
    for &k in keys.iter() {
        for (b, c) in counts.iter_mut().enumerate() {
            c[k.byte(b)] += 1;
        }
    }
    tk.resize(n, K::default());
    tp.resize(n, 0);
    for (b, c) in counts.iter().enumerate() {
        if c.iter().any(|&x| x as usize == n) {
            continue;
        }
        let mut start = [0u32; 256];
        let mut acc = 0u32;
        for (s, &x) in start.iter_mut().zip(c.iter()) {
            *s = acc;
            acc += x;
        }
        for i in 0..n {
            let k = keys[i];
            let slot = &mut start[k.byte(b)];
            tk[*slot as usize] = k;
            tp[*slot as usize] = pos[i];
            *slot += 1;
        }
        std::mem::swap(keys, tk);
        std::mem::swap(pos, tp);
    }
}

/// The stable sorting order of each of `rows` contiguous rows of `cols`
/// elements (descending: larger first, equal elements still in order), as
/// int64 positions, rows in parallel.
pub fn sort_rows<T: SortKey>(data: &[T], rows: usize, cols: usize, descending: bool) -> Vec<i64> {
    if rows == 0 || cols == 0 {
        return Vec::new();
    }
    let mut out = crate::error::zeroed_vec::<i64>(rows * cols);
    let o = SendPtr(out.as_mut_ptr());
    par_units(rows, cols * 8, |lo, hi| {
        let (mut keys, mut pos, mut tk, mut tp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for r in lo..hi {
            let row = &data[r * cols..(r + 1) * cols];
            keys.clear();
            pos.clear();
            if descending {
                keys.extend(row.iter().map(|&x| x.key().reverse()));
            } else {
                keys.extend(row.iter().map(|&x| x.key()));
            }
            pos.extend(0..cols as u32);
            radix_sort(&mut keys, &mut pos, &mut tk, &mut tp);
            // SAFETY: row `r` of the output belongs to this unit alone.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(r * cols), cols) };
            for (d, &p) in dst.iter_mut().zip(&pos) {
                *d = p as i64;
            }
        }
    });
    out
}

/// `(key, position)` pairs of a row, keys reversed for `largest`.
fn pairs_of<T: SortKey>(row: &[T], largest: bool, pairs: &mut Vec<(T::K, u32)>) {
    pairs.clear();
    if largest {
        pairs.extend(
            row.iter()
                .enumerate()
                .map(|(i, &x)| (x.key().reverse(), i as u32)),
        );
    } else {
        pairs.extend(row.iter().enumerate().map(|(i, &x)| (x.key(), i as u32)));
    }
}

/// The positions of the `k` largest (or smallest) elements of each row, in
/// order, as a stable sort would list them first: the `k` are chosen by
/// selection and only they are sorted.
pub fn topk_rows<T: SortKey>(
    data: &[T],
    rows: usize,
    cols: usize,
    k: usize,
    largest: bool,
) -> Vec<i64> {
    if rows == 0 || k == 0 || cols == 0 {
        return Vec::new();
    }
    let mut out = crate::error::zeroed_vec::<i64>(rows * k);
    let o = SendPtr(out.as_mut_ptr());
    par_units(rows, cols * 4, |lo, hi| {
        let mut pairs = Vec::with_capacity(cols);
        for r in lo..hi {
            if k <= SMALL_K && k < cols {
                // SAFETY: row `r` of the output belongs to this unit alone.
                let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(r * k), k) };
                small_topk(&data[r * cols..(r + 1) * cols], k, largest, &mut pairs, dst);
                continue;
            }
            pairs_of(&data[r * cols..(r + 1) * cols], largest, &mut pairs);
            if k < cols {
                pairs.select_nth_unstable(k - 1);
            }
            pairs[..k].sort_unstable();
            // SAFETY: row `r` of the output belongs to this unit alone.
            let dst = unsafe { std::slice::from_raw_parts_mut(o.get().add(r * k), k) };
            for (d, &(_, p)) in dst.iter_mut().zip(&pairs[..k]) {
                *d = p as i64;
            }
        }
    });
    out
}

/// Up to this many picks per row, `topk` keeps them in a sorted buffer while
/// scanning the row once instead of building and selecting over all pairs.
const SMALL_K: usize = 16;

/// The `k` best `(key, position)` pairs of `row` in order, as the stable sort
/// lists them: most elements cost one compare against the `k`-th best key so
/// far. Positions only grow, so a newcomer equal to a kept key goes after it
/// (and one equal to the `k`-th is not taken), which is the stable order.
fn small_topk<T: SortKey>(
    row: &[T],
    k: usize,
    largest: bool,
    buf: &mut Vec<(T::K, u32)>,
    dst: &mut [i64],
) {
    buf.clear();
    let key_of = |x: T| if largest { x.key().reverse() } else { x.key() };
    let step = |buf: &mut Vec<(T::K, u32)>, i: usize| {
        let key = key_of(row[i]);
        if buf.len() == k {
            if key >= buf[k - 1].0 {
                return;
            }
            buf.pop();
        }
        let at = buf.partition_point(|e| e.0 <= key);
        buf.insert(at, (key, i as u32));
    };
    let mut i = 0;
    while i < row.len() && buf.len() < k {
        step(buf, i);
        i += 1;
    }
    // Once `k` are kept, most chunks hold nothing better than the `k`-th:
    // one branch-free test per chunk skips them whole.
    const CHUNK: usize = 32;
    // In a chunk that has some, only the elements below the threshold the
    // chunk started with are stepped through (on random data a chunk in the
    // first few hundred holds one about as often as not, and a scalar step
    // for each of its elements cost more than the whole vector test).
    let mut below = [false; CHUNK];
    while i + CHUNK <= row.len() {
        let c = &row[i..i + CHUNK];
        if any_below(c, buf[k - 1].0, largest) {
            flags_below(c, buf[k - 1].0, largest, &mut below);
            for (j, &b) in below.iter().enumerate() {
                if b {
                    step(buf, i + j);
                }
            }
        }
        i += CHUNK;
    }
    for j in i..row.len() {
        step(buf, j);
    }
    for (d, &(_, p)) in dst.iter_mut().zip(buf.iter()) {
        *d = p as i64;
    }
}

/// Whether some element of `c` has a (possibly reversed) key below `thr`.
#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn any_below<T: SortKey>(c: &[T], thr: T::K, largest: bool) -> bool {
    let mut hit = false;
    if largest {
        for &x in c {
            hit |= x.key().reverse() < thr;
        }
    } else {
        for &x in c {
            hit |= x.key() < thr;
        }
    }
    hit
}

/// Which elements of `c` have a (possibly reversed) key below `thr`.
#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn flags_below<T: SortKey>(c: &[T], thr: T::K, largest: bool, out: &mut [bool]) {
    if largest {
        for (o, &x) in out.iter_mut().zip(c) {
            *o = x.key().reverse() < thr;
        }
    } else {
        for (o, &x) in out.iter_mut().zip(c) {
            *o = x.key() < thr;
        }
    }
}

/// For each row, the position of the element a stable ascending sort puts
/// at `pick(row)` (a rank from 0), found by selection.
pub fn select_rows<T: SortKey>(
    data: &[T],
    rows: usize,
    cols: usize,
    pick: impl Fn(&[T]) -> Option<usize> + Sync,
) -> Vec<i64> {
    let mut out = crate::error::zeroed_vec::<i64>(rows);
    if rows == 0 || cols == 0 {
        return out;
    }
    let o = SendPtr(out.as_mut_ptr());
    par_units(rows, cols * 4, |lo, hi| {
        let mut pairs = Vec::with_capacity(cols);
        for r in lo..hi {
            let row = &data[r * cols..(r + 1) * cols];
            // `None`: the row's answer is not a rank (a NaN that wins outright).
            let p = match pick(row) {
                Some(rank) => {
                    pairs_of(row, false, &mut pairs);
                    pairs.select_nth_unstable(rank).1 .1 as i64
                }
                None => row.iter().position(|&x| is_nan(x)).unwrap_or(0) as i64,
            };
            // SAFETY: slot `r` belongs to this unit alone.
            unsafe { *o.get().add(r) = p };
        }
    });
    out
}

/// Whether `x` is NaN (for integers, never).
#[inline(always)]
#[allow(clippy::eq_op)]
pub fn is_nan<T: Element>(x: T) -> bool {
    x != x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference stable order: `sort_by` on positions with NaN last.
    fn reference(row: &[f32], descending: bool) -> Vec<i64> {
        let mut idx: Vec<usize> = (0..row.len()).collect();
        let cmp = |a: f32, b: f32| match (a.is_nan(), b.is_nan()) {
            (false, false) => a.partial_cmp(&b).unwrap(),
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
        };
        if descending {
            idx.sort_by(|&i, &j| cmp(row[j], row[i]));
        } else {
            idx.sort_by(|&i, &j| cmp(row[i], row[j]));
        }
        idx.into_iter().map(|i| i as i64).collect()
    }

    fn sample(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|i| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = ((s >> 40) % 41) as f32 - 20.0;
                match i % 23 {
                    0 => f32::NAN,
                    5 => -0.0,
                    7 => f32::INFINITY,
                    11 => f32::NEG_INFINITY,
                    13 => 1e-40,
                    _ => v * 0.5,
                }
            })
            .collect()
    }

    #[test]
    fn sort_matches_a_stable_comparison_sort() {
        for &(rows, cols) in &[(3, 1), (5, 17), (4, 64), (3, 65), (2, 1000), (40, 3000)] {
            let data = sample(rows * cols, cols as u64);
            for desc in [false, true] {
                let got = sort_rows(&data, rows, cols, desc);
                for r in 0..rows {
                    let row = &data[r * cols..(r + 1) * cols];
                    assert_eq!(
                        &got[r * cols..(r + 1) * cols],
                        &reference(row, desc)[..],
                        "{rows}x{cols} desc={desc}"
                    );
                }
            }
        }
    }

    #[test]
    fn topk_and_selection_match_the_sorted_order() {
        for &(rows, cols) in &[(4, 1), (6, 9), (3, 200), (50, 1500)] {
            let data = sample(rows * cols, 7 + cols as u64);
            // Small `k` (below `SMALL_K`) takes the one-pass buffer, the rest select.
            for k in [1, 2, 5, 16, cols / 2 + 1, cols] {
                if k > cols {
                    continue;
                }
                for largest in [false, true] {
                    let got = topk_rows(&data, rows, cols, k, largest);
                    for r in 0..rows {
                        let row = &data[r * cols..(r + 1) * cols];
                        assert_eq!(&got[r * k..(r + 1) * k], &reference(row, largest)[..k]);
                    }
                }
                let got = select_rows(&data, rows, cols, |_| Some(k - 1));
                for r in 0..rows {
                    let row = &data[r * cols..(r + 1) * cols];
                    assert_eq!(got[r], reference(row, false)[k - 1]);
                }
            }
        }
    }

    #[test]
    fn integer_and_half_keys_keep_order() {
        let ints: Vec<i64> = vec![5, -3, i64::MIN, i64::MAX, 0, -1, 5];
        let got = sort_rows(&ints, 1, ints.len(), false);
        assert_eq!(got, vec![2, 1, 5, 4, 0, 6, 3]);
        let small: Vec<i8> = vec![3, -128, 127, 0, -1];
        assert_eq!(sort_rows(&small, 1, 5, true), vec![2, 0, 3, 4, 1]);
        let h: Vec<f16> = [1.0f32, -2.0, f32::NAN, 0.5]
            .iter()
            .map(|&x| f16::from_f32(x))
            .collect();
        assert_eq!(sort_rows(&h, 1, 4, false), vec![1, 3, 0, 2]);
        let b = vec![true, false, true, false];
        assert_eq!(sort_rows(&b, 1, 4, true), vec![0, 2, 1, 3]);
    }

    /// The same positions on one thread and on two.
    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let data = sample(300 * 700, 3);
        let runs: Vec<_> = [1, 2]
            .iter()
            .map(|&t| {
                crate::kernels::parallel::set_num_threads(t).unwrap();
                (
                    sort_rows(&data, 300, 700, false),
                    topk_rows(&data, 300, 700, 9, true),
                )
            })
            .collect();
        assert_eq!(runs[0], runs[1]);
    }
}
