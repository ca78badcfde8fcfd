//! The blocked product both instruction paths share.
//!
//! For each block of columns, `B` is packed once (split over the pool) into
//! panels of `NR` columns, each holding all of `k` as consecutive blocks of
//! `KC` steps. Then tasks, each a block of rows (and, when there are too
//! few row blocks to keep the team busy, a group of the column panels),
//! pack their rows of `A` (all of `k`, on the thread that uses them) and
//! walk: for each panel of `B`, for each `k` block, for each register tile
//! of the row block. The `B` block a tile reads (`KC x NR`) stays in L1
//! across the row block, the task's `A` in L2.
//!
//! An element's sum runs on across the `k` blocks: a tile starts from the
//! previous block's partial sums, which wait in a small per-task buffer
//! (the row block by one panel, in L1 or L2: `C` itself is written once),
//! and the last block writes `alpha * sum + beta * C`, rounded to bfloat16
//! if asked.

use std::cell::Cell;
use std::thread::LocalKey;

use super::{MatRef, Out};
use crate::kernels::{parallel, SendPtr};

/// Products below this many multiply-adds stay on the calling thread (as
/// the float32 ones do: waking a helper costs more).
const PARALLEL_WORK: usize = 1 << 18;
/// Bytes of packed `A` per task (all of `k` for the row block): an L2.
const A_BYTES: usize = 512 << 10;
/// Bytes of packed `B` per column block.
const B_BYTES: usize = 4 << 20;
/// Results at least this large (when `C` is not read) go to memory with
/// non-temporal stores: they would not stay in cache anyway, and a plain
/// store first reads each line it writes (measured on a 1024x1024 float32
/// result with AMX: 1.35x faster).
const STREAM_BYTES: usize = 2 << 20;

/// Where a tile's accumulators start: the float32 partial sums at `ptr`
/// (element `(i, j)` at `ptr + i * rs + j * cs`), or zero.
#[derive(Clone, Copy)]
pub(super) struct Init {
    pub ptr: *const f32,
    pub rs: usize,
    pub cs: usize,
}

#[derive(Clone, Copy)]
pub(super) enum Target {
    F32(*mut f32),
    Bf16(*mut u16),
}

/// Where a tile's result goes: `alpha * acc + beta * C` into the matrix at
/// `target` ([`super::finish`]); `stream` (only with `beta == 0`): with
/// non-temporal stores where a whole aligned vector is written.
#[derive(Clone, Copy)]
pub(super) struct Dst {
    pub target: Target,
    pub rs: usize,
    pub cs: usize,
    pub alpha: f32,
    pub beta: f32,
    pub stream: bool,
}

// SAFETY (both): plain pointers into the caller's matrices; each task
// reads and writes only its own tiles' elements.
unsafe impl Send for Dst {}
unsafe impl Sync for Dst {}
unsafe impl Send for Init {}
unsafe impl Sync for Init {}

impl Dst {
    /// The same destination moved by `(i, j)`.
    fn at(self, i: usize, j: usize) -> Dst {
        let off = i * self.rs + j * self.cs;
        let target = match self.target {
            Target::F32(p) => Target::F32(p.wrapping_add(off)),
            Target::Bf16(p) => Target::Bf16(p.wrapping_add(off)),
        };
        Dst { target, ..self }
    }

    /// Whether this is a plain float32 store (`alpha = 1`, `beta = 0`,
    /// cached).
    pub fn plain_f32(&self) -> Option<*mut f32> {
        match self.target {
            Target::F32(p) if self.alpha == 1.0 && self.beta == 0.0 && !self.stream => Some(p),
            _ => None,
        }
    }
}

/// Where a tile reads its rows of `A`: from `ptr`, rows `row` bytes apart,
/// consecutive steps of `k` (a kernel's unit) `step` bytes apart. A packed
/// panel, or, where a kernel can read it as it is, `A` itself.
#[derive(Clone, Copy)]
pub(super) struct APanel {
    pub ptr: *const u8,
    pub row: usize,
    pub step: usize,
}

/// A register-tile kernel and the blocking that suits it.
pub(super) trait Kernel {
    /// Rows and columns of a tile (`NR` a multiple of 16).
    const MR: usize;
    const NR: usize;
    /// Steps of `k` per block (even), rows per `A` block (a multiple of
    /// `MR`), columns per `B` block (a multiple of `NR`).
    const KC: usize;
    const MC: usize;
    const NC: usize;
    /// Pairs per panel are padded to a multiple of this.
    const KQ_ALIGN: usize;

    /// Packs rows `i0..i0 + rows` (at most `MR`) and columns `p0..p0 + kb`
    /// of `a` into one panel of `MR * kq` words at `out`, or leaves them
    /// where they are; returns where the tile reads them.
    unsafe fn pack_a(
        a: MatRef<u16>,
        i0: usize,
        rows: usize,
        p0: usize,
        kb: usize,
        kq: usize,
        out: *mut u32,
    ) -> APanel;

    /// Called on a thread before its first tile of a task and after its last.
    unsafe fn begin() {}
    unsafe fn end() {}

    /// One tile: `kq` pairs of the packed panels `a` and `b`, starting from
    /// `init`, written to the `rows x cols` corner of `dst`.
    unsafe fn tile(
        kq: usize,
        a: APanel,
        b: *const u32,
        init: Option<Init>,
        dst: Dst,
        rows: usize,
        cols: usize,
    );
}

/// A cache line of packed words: packed panels start on a line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; 16]);

thread_local! {
    static PACK_A: Cell<Vec<Line>> = const { Cell::new(Vec::new()) };
    static PACK_B: Cell<Vec<Line>> = const { Cell::new(Vec::new()) };
    static PARTIAL: Cell<Vec<Line>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` with this thread's buffer `key`, grown to `words`. The buffer
/// is taken out while in use, so a nested call gets a fresh one.
fn with_buf<R>(
    key: &'static LocalKey<Cell<Vec<Line>>>,
    words: usize,
    f: impl FnOnce(*mut u32) -> R,
) -> R {
    let mut v = key.take();
    let lines = words.div_ceil(16);
    if v.len() < lines {
        v = vec![Line([0; 16]); lines];
    }
    let r = f(v.as_mut_ptr() as *mut u32);
    key.set(v);
    r
}

/// `c = alpha * a @ b + beta * c` with kernel `K` (`k >= 1`, `m, n >= 1`,
/// `alpha != 0`).
///
/// # Safety
/// Valid views with chaining shapes; `K`'s instructions available.
pub(super) unsafe fn gemm<K: Kernel>(
    a: MatRef<u16>,
    b: MatRef<u16>,
    c: Out,
    alpha: f32,
    beta: f32,
    parallel: bool,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    let work = if parallel && m * n * k >= PARALLEL_WORK {
        usize::MAX
    } else {
        0
    };
    let (target, rs, cs, size) = match &c {
        Out::F32(c) => (Target::F32(c.ptr), c.rs, c.cs, 4),
        Out::Bf16(c) => (Target::Bf16(c.ptr), c.rs, c.cs, 2),
    };
    let last = Dst {
        target,
        rs,
        cs,
        alpha,
        beta,
        stream: beta == 0.0 && m * n * size >= STREAM_BYTES,
    };
    // The `k` blocks: all `KC` steps but the last; in a packed panel, block
    // `blk` starts `blk * kq_full` pairs in.
    let blocks = k.div_ceil(K::KC);
    let kq_full = K::KC / 2;
    let kb_of = |blk: usize| K::KC.min(k - blk * K::KC);
    let kq_of = |blk: usize| kb_of(blk).div_ceil(2).next_multiple_of(K::KQ_ALIGN);
    let kq_total = (blocks - 1) * kq_full + kq_of(blocks - 1);
    let panel_words = kq_total * K::NR;
    let nc_max = (B_BYTES / (4 * panel_words)).clamp(1, K::NC / K::NR) * K::NR;
    let mc_max = (A_BYTES / (4 * kq_total * K::MR)).clamp(1, K::MC / K::MR) * K::MR;
    parallel::run(work, |threads| {
        for jc in (0..n).step_by(nc_max) {
            let nc = nc_max.min(n - jc);
            let panels = nc.div_ceil(K::NR);
            with_buf(&PACK_B, panels * panel_words, |bp| {
                let bp = SendPtr(bp);
                let pack = |lo: usize, hi: usize| {
                    if b.cs == 1 {
                        let j0 = jc + lo * K::NR;
                        for blk in 0..blocks {
                            // SAFETY: inside `b` and the buffer.
                            unsafe {
                                super::pack::b_rows(
                                    b,
                                    blk * K::KC,
                                    kb_of(blk),
                                    j0,
                                    ((hi - lo) * K::NR).min(n - j0),
                                    kq_of(blk),
                                    K::NR / 16,
                                    panel_words,
                                    bp.get().add(lo * panel_words + blk * kq_full * K::NR),
                                )
                            }
                        }
                        return;
                    }
                    for p in lo..hi {
                        let j0 = jc + p * K::NR;
                        for blk in 0..blocks {
                            // SAFETY: inside `b` and the buffer.
                            unsafe {
                                super::pack::b_panel(
                                    b,
                                    blk * K::KC,
                                    kb_of(blk),
                                    j0,
                                    K::NR.min(n - j0),
                                    kq_of(blk),
                                    K::NR / 16,
                                    bp.get().add(p * panel_words + blk * kq_full * K::NR),
                                )
                            }
                        }
                    }
                };
                if threads > 1 && panels > 1 {
                    let chunk = panels.div_ceil(2 * threads);
                    parallel::tasks(panels.div_ceil(chunk), |t| {
                        pack(t * chunk, ((t + 1) * chunk).min(panels))
                    });
                } else {
                    pack(0, panels);
                }
                // Row blocks (and column groups) as tasks.
                let target = if threads > 1 { 2 * threads } else { 1 };
                let mut mblocks = m.div_ceil(mc_max).max(target.min(m.div_ceil(K::MR)));
                let mc = m.div_ceil(mblocks).next_multiple_of(K::MR);
                mblocks = m.div_ceil(mc);
                let groups = if mblocks >= target {
                    1
                } else {
                    target.div_ceil(mblocks).min(panels)
                };
                let per_group = panels.div_ceil(groups);
                let groups = panels.div_ceil(per_group);
                let task = |t: usize| {
                    let (ib, g) = (t / groups, t % groups);
                    let i0 = ib * mc;
                    let rows = mc.min(m - i0);
                    let tiles = rows.div_ceil(K::MR);
                    let tile_words = K::MR * kq_total;
                    with_buf(&PACK_A, tiles * tile_words, |ap| {
                        with_buf(&PARTIAL, tiles * K::MR * K::NR, |sp| {
                            // SAFETY: the tiles read the packed buffers and
                            // write only this task's block of `C` and its
                            // own partial sums.
                            unsafe {
                                let mut panels_a = Vec::with_capacity(tiles * blocks);
                                for ti in 0..tiles {
                                    let r0 = ti * K::MR;
                                    for blk in 0..blocks {
                                        panels_a.push(K::pack_a(
                                            a,
                                            i0 + r0,
                                            K::MR.min(rows - r0),
                                            blk * K::KC,
                                            kb_of(blk),
                                            kq_of(blk),
                                            ap.add(ti * tile_words + blk * kq_full * K::MR),
                                        ));
                                    }
                                }
                                K::begin();
                                for p in g * per_group..((g + 1) * per_group).min(panels) {
                                    let j = jc + p * K::NR;
                                    let cols = K::NR.min(n - j);
                                    for blk in 0..blocks {
                                        for ti in 0..tiles {
                                            let i = i0 + ti * K::MR;
                                            let part = sp.add(ti * K::MR * K::NR) as *mut f32;
                                            let init = (blk > 0).then_some(Init {
                                                ptr: part,
                                                rs: K::NR,
                                                cs: 1,
                                            });
                                            let dst = if blk + 1 == blocks {
                                                last.at(i, j)
                                            } else {
                                                Dst {
                                                    target: Target::F32(part),
                                                    rs: K::NR,
                                                    cs: 1,
                                                    alpha: 1.0,
                                                    beta: 0.0,
                                                    stream: false,
                                                }
                                            };
                                            K::tile(
                                                kq_of(blk),
                                                panels_a[ti * blocks + blk],
                                                bp.get()
                                                    .add(p * panel_words + blk * kq_full * K::NR),
                                                init,
                                                dst,
                                                K::MR.min(m - i),
                                                cols,
                                            );
                                        }
                                    }
                                }
                                K::end();
                                if last.stream {
                                    // Order the non-temporal stores before the
                                    // task is reported done.
                                    #[cfg(target_arch = "x86_64")]
                                    std::arch::x86_64::_mm_sfence();
                                }
                            }
                        })
                    })
                };
                if threads > 1 && mblocks * groups > 1 {
                    parallel::tasks(mblocks * groups, task);
                } else {
                    (0..mblocks * groups).for_each(task);
                }
            });
        }
    });
}
