//! CRC-32C (the Castagnoli polynomial of iSCSI, ext4 and Btrfs): the
//! checksum `ferrograd.save` stores for every tensor and for the header,
//! and `ferrograd.load` verifies, so a flipped bit in a checkpoint is an
//! error naming the tensor rather than a silently different value.
//!
//! x86-64 has an instruction for this polynomial (SSE4.2 `crc32`, chosen at
//! run time; a table-driven loop otherwise). Its latency is three cycles,
//! so a long buffer runs as three interleaved streams, and a large tensor is
//! cut into pieces checksummed on the thread pool. Pieces are joined with
//! the linearity of CRCs: the register after `A || B` is the register after
//! `A` advanced over `len(B)` zero bytes, xor the register of `B` alone.

/// The polynomial, bit-reflected (bit 31 is `x^0`).
const POLY: u32 = 0x82F6_3B78;

const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    // t[s][i]: the register after byte i followed by s zero bytes.
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

static TABLES: [[u32; 256]; 8] = make_tables();

/// The register after `data`, from register `crc` (no pre/post inversion),
/// eight bytes a step through the tables.
fn update_table(mut crc: u32, data: &[u8]) -> u32 {
    let t = &TABLES;
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = u32::from_le_bytes([c[0], c[1], c[2], c[3]]) ^ crc;
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = t[7][(lo & 0xff) as usize]
            ^ t[6][((lo >> 8) & 0xff) as usize]
            ^ t[5][((lo >> 16) & 0xff) as usize]
            ^ t[4][(lo >> 24) as usize]
            ^ t[3][(hi & 0xff) as usize]
            ^ t[2][((hi >> 8) & 0xff) as usize]
            ^ t[1][((hi >> 16) & 0xff) as usize]
            ^ t[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        crc = (crc >> 8) ^ t[0][((crc ^ b as u32) & 0xff) as usize];
    }
    crc
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn update_sse42(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut c = crc as u64;
    let mut chunks = data.chunks_exact(8);
    for w in &mut chunks {
        c = _mm_crc32_u64(c, u64::from_le_bytes(w.try_into().expect("8 bytes")));
    }
    let mut c = c as u32;
    for &b in chunks.remainder() {
        c = _mm_crc32_u8(c, b);
    }
    c
}

/// Three streams over the thirds of `data` in one loop (the instruction's
/// latency is three of its issue slots), joined at the end.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn update_sse42_x3(crc: u32, data: &[u8]) -> u32 {
    use std::arch::x86_64::_mm_crc32_u64;
    const MIN: usize = 3 * 4096;
    if data.len() < MIN {
        return update_sse42(crc, data);
    }
    let third = (data.len() / 3) & !7;
    let (a, rest) = data.split_at(third);
    let (b, c) = rest.split_at(third);
    let (mut ra, mut rb, mut rc) = (crc as u64, 0u64, 0u64);
    let words = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let mut i = 0;
    while i < third {
        ra = _mm_crc32_u64(ra, words(a, i));
        rb = _mm_crc32_u64(rb, words(b, i));
        rc = _mm_crc32_u64(rc, words(c, i));
        i += 8;
    }
    let rc = update_sse42(rc as u32, &c[third..]);
    let ab = shift(ra as u32, third as u64) ^ rb as u32;
    shift(ab, (c.len()) as u64) ^ rc
}

/// Whether [`update`] takes the SSE4.2 `crc32` path here.
pub(crate) fn has_crc32_path() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("sse4.2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The register after `data` from register `crc`, by the fastest way here.
fn update(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the CPU has SSE4.2 (checked just above).
            return unsafe { update_sse42_x3(crc, data) };
        }
    }
    update_table(crc, data)
}

/// `a * b` modulo the polynomial, both bit-reflected.
fn mult(a: u32, mut b: u32) -> u32 {
    let mut p = 0u32;
    let mut m = 1u32 << 31;
    while m != 0 {
        if a & m != 0 {
            p ^= b;
        }
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        m >>= 1;
    }
    p
}

/// `x^(8 n)` modulo the polynomial: the effect of `n` zero bytes.
fn zeros_power(mut n: u64) -> u32 {
    let mut p = 1u32 << 31; // x^0
    let mut base = 1u32 << (31 - 8); // x^8
    while n != 0 {
        if n & 1 != 0 {
            p = mult(p, base);
        }
        base = mult(base, base);
        n >>= 1;
    }
    p
}

/// Register `crc` advanced over `n` zero bytes.
fn shift(crc: u32, n: u64) -> u32 {
    mult(zeros_power(n), crc)
}

/// The CRC-32C of `data` (initial register and final xor all ones).
pub fn crc32c(data: &[u8]) -> u32 {
    !update(!0, data)
}

/// The CRC-32C of `first || second` from the CRCs of the two parts.
pub fn combine(first: u32, second: u32, second_len: u64) -> u32 {
    // The inversions at both ends cancel: shifting is linear, and the
    // all-ones start of the second part is the first's register run on.
    shift(first, second_len) ^ second
}

/// Below this many bytes a slice is one task.
const PIECE: usize = 1 << 20;

/// The CRC-32C of each slice; large ones are cut into pieces checksummed on
/// the thread pool and joined in order.
pub fn crc32c_many(slices: &[&[u8]]) -> Vec<u32> {
    let total: usize = slices.iter().map(|s| s.len()).sum();
    if total < 2 * PIECE {
        return slices.iter().map(|s| crc32c(s)).collect();
    }
    // (slice, start, end) of every piece, in order within each slice.
    let mut pieces = Vec::new();
    for (k, s) in slices.iter().enumerate() {
        let mut start = 0;
        loop {
            let end = (start + PIECE).min(s.len());
            pieces.push((k, start, end));
            if end == s.len() {
                break;
            }
            start = end;
        }
    }
    let regs: Vec<std::sync::atomic::AtomicU32> = (0..pieces.len())
        .map(|_| std::sync::atomic::AtomicU32::new(0))
        .collect();
    crate::kernels::parallel::tasks(pieces.len(), |i| {
        let (k, a, b) = pieces[i];
        // Each piece's register from zero; the slice's start joins below.
        regs[i].store(
            update(0, &slices[k][a..b]),
            std::sync::atomic::Ordering::Relaxed,
        );
    });
    let mut out = vec![!0u32; slices.len()];
    let full = zeros_power(PIECE as u64);
    for (i, &(k, a, b)) in pieces.iter().enumerate() {
        let r = regs[i].load(std::sync::atomic::Ordering::Relaxed);
        let advanced = if b - a == PIECE {
            mult(full, out[k])
        } else {
            shift(out[k], (b - a) as u64)
        };
        out[k] = advanced ^ r;
    }
    out.iter().map(|r| !r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitwise(data: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in data {
            c ^= b as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            }
        }
        !c
    }

    fn bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    #[test]
    fn check_value_and_paths_agree() {
        // The standard check value of CRC-32C.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(b""), 0);
        for n in [0, 1, 7, 8, 9, 63, 4095, 3 * 4096, 3 * 4096 + 5, 50_001] {
            let d = bytes(n, n as u64 + 1);
            let want = bitwise(&d);
            assert_eq!(!update_table(!0, &d), want, "table, {n} bytes");
            assert_eq!(crc32c(&d), want, "dispatch, {n} bytes");
        }
    }

    #[test]
    fn pieces_join() {
        let d = bytes(3 * PIECE + 12_345, 7);
        let small = bytes(1000, 3);
        let got = crc32c_many(&[&d, &small, &[], &d[..PIECE]]);
        assert_eq!(
            got,
            vec![bitwise(&d), bitwise(&small), 0, bitwise(&d[..PIECE])]
        );
        for cut in [0, 1, 100, 4096, d.len()] {
            let (a, b) = d.split_at(cut);
            assert_eq!(combine(crc32c(a), crc32c(b), b.len() as u64), bitwise(&d));
        }
    }
}
