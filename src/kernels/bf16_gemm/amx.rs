//! The AMX-BF16 tile: a 32x32 float32 block of `C` held in four tile
//! registers (`tmm0..3`, 16x16 each), updated per 32 steps of `k` by two
//! 16x32 tiles of `A` (`tmm4`, `tmm5`) and two 32x16 tiles of `B` (`tmm6`,
//! `tmm7`, rows of 16 pair-words: the packed panel layout as it is) with
//! four `tdpbf16ps`, each 16 x 16 x 32 multiply-adds.
//!
//! The tile instructions' intrinsics and target features are unstable in
//! Rust, so they are written as `asm!` (the assembler knows them whatever
//! the target features). The tile registers are invisible to the compiler,
//! which never uses them; each task configures them (`ldtilecfg`) before
//! its first tile and releases them (`tilerelease`) after its last, so a
//! thread between tasks carries no tile state (which would make every
//! context switch save 8 KiB). Linux hands the tile state to a process only
//! after `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`, asked once
//! ([`enable`]).

use std::arch::asm;
use std::arch::x86_64::*;
use std::sync::OnceLock;

use super::avx512::{load_row, store_row};
use super::driver::{self, APanel, Dst, Init};
use super::{pack, MatRef};

/// Whether the CPU has AMX-BF16, the OS manages tile state, and this
/// process may use it (asked for on the first call).
pub(super) fn enable() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        let leaf7 = __cpuid_count(7, 0);
        let (amx_bf16, amx_tile) = (leaf7.edx & 1 << 22 != 0, leaf7.edx & 1 << 24 != 0);
        let osxsave = __cpuid(1).ecx & 1 << 27 != 0;
        if !(amx_bf16 && amx_tile && osxsave) {
            return false;
        }
        let xcr0: u64;
        // SAFETY: `xgetbv` is available when OSXSAVE is set.
        unsafe {
            let (lo, hi): (u32, u32);
            asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack));
            xcr0 = (hi as u64) << 32 | lo as u64;
        }
        // XTILECFG (17) and XTILEDATA (18) enabled by the OS.
        if xcr0 & (3 << 17) != 3 << 17 {
            return false;
        }
        request_permission()
    })
}

#[cfg(target_os = "linux")]
fn request_permission() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a plain system call; it only records the permission.
    unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        ) == 0
    }
}

#[cfg(not(target_os = "linux"))]
fn request_permission() -> bool {
    false
}

/// Tile palette 1 with all eight tiles 16 rows of 64 bytes.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
}

static CONFIG: TileConfig = TileConfig {
    palette: 1,
    start_row: 0,
    reserved: [0; 14],
    colsb: [64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0],
    rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
};

/// The 32x32 tile's staging buffer for edges and scaled starts/results.
#[repr(C, align(64))]
struct Block([[f32; 32]; 32]);

pub(super) struct Kernel;

impl driver::Kernel for Kernel {
    const MR: usize = 32;
    const NR: usize = 32;
    const KC: usize = 512;
    const MC: usize = 256;
    const NC: usize = 4096;
    const KQ_ALIGN: usize = 16;

    unsafe fn pack_a(
        a: MatRef<u16>,
        i0: usize,
        rows: usize,
        p0: usize,
        kb: usize,
        kq: usize,
        out: *mut u32,
    ) -> APanel {
        if a.cs == 1 && rows == 32 && kb == 2 * kq {
            // Whole tiles of a row-major `A`: `tileloadd` reads its rows
            // where they are (64 bytes of each, `rs` apart).
            return APanel {
                ptr: a.ptr.add(i0 * a.rs + p0) as *const u8,
                row: 2 * a.rs,
                step: 64,
            };
        }
        pack::a_tiles(a, i0, rows, p0, kb, kq, out);
        APanel {
            ptr: out as *const u8,
            row: 64,
            step: 2048,
        }
    }

    unsafe fn begin() {
        asm!("ldtilecfg [{}]", in(reg) &CONFIG as *const TileConfig, options(nostack, readonly));
    }

    unsafe fn end() {
        asm!("tilerelease", options(nostack, nomem));
    }

    unsafe fn tile(
        kq: usize,
        a: APanel,
        b: *const u32,
        init: Option<Init>,
        dst: Dst,
        rows: usize,
        cols: usize,
    ) {
        tile(kq, a, b, init, dst, rows, cols)
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")]
unsafe fn tile(
    kq: usize,
    a: APanel,
    b: *const u32,
    init: Option<Init>,
    dst: Dst,
    rows: usize,
    cols: usize,
) {
    // Rows past `rows` are never written back, so need no zeros.
    let mut block = std::mem::MaybeUninit::<Block>::uninit();
    let buf = block.as_mut_ptr() as *mut f32;
    let whole = rows == 32 && cols == 32;
    match init {
        None => asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            options(nostack, nomem)
        ),
        Some(init) => {
            let (p, stride) = if whole && init.cs == 1 {
                (init.ptr, init.rs * 4)
            } else {
                for r in 0..rows {
                    let v = load_row::<2>(&init, r, cols);
                    _mm512_storeu_ps(buf.add(32 * r), v[0]);
                    _mm512_storeu_ps(buf.add(32 * r + 16), v[1]);
                }
                (buf as *const f32, 128)
            };
            asm!(
                "tileloadd tmm0, [{p} + {s} * 1]",
                "tileloadd tmm1, [{p1} + {s} * 1]",
                "tileloadd tmm2, [{p2} + {s} * 1]",
                "tileloadd tmm3, [{p3} + {s} * 1]",
                p = in(reg) p,
                p1 = in(reg) p.add(16),
                p2 = in(reg) p.byte_add(16 * stride),
                p3 = in(reg) p.byte_add(16 * stride).add(16),
                s = in(reg) stride,
                options(nostack, readonly)
            );
        }
    }
    let nt = kq / 16;
    for t in 0..nt {
        let a0 = a.ptr.add(t * a.step);
        asm!(
            "tileloadd tmm4, [{a0} + {sa} * 1]",
            "tileloadd tmm6, [{b0} + {sb} * 1]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tileloadd tmm7, [{b1} + {sb} * 1]",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tileloadd tmm5, [{a1} + {sa} * 1]",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            a0 = in(reg) a0,
            a1 = in(reg) a0.add(16 * a.row),
            b0 = in(reg) b.add(t * 256),
            b1 = in(reg) b.add(kq * 16 + t * 256),
            sa = in(reg) a.row,
            sb = in(reg) 64usize,
            options(nostack, readonly)
        );
    }
    let (p, stride) = match dst.plain_f32() {
        Some(p) if whole && dst.cs == 1 => (p, dst.rs * 4),
        _ => (buf, 128),
    };
    asm!(
        "tilestored [{p} + {s} * 1], tmm0",
        "tilestored [{p1} + {s} * 1], tmm1",
        "tilestored [{p2} + {s} * 1], tmm2",
        "tilestored [{p3} + {s} * 1], tmm3",
        p = in(reg) p,
        p1 = in(reg) p.add(16),
        p2 = in(reg) p.byte_add(16 * stride),
        p3 = in(reg) p.byte_add(16 * stride).add(16),
        s = in(reg) stride,
        options(nostack)
    );
    if p == buf {
        for r in 0..rows {
            let v = [
                _mm512_loadu_ps(buf.add(32 * r)),
                _mm512_loadu_ps(buf.add(32 * r + 16)),
            ];
            store_row::<2>(&v, &dst, r, cols);
        }
    }
}
