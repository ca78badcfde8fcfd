//! Which instruction-set path each kernel family takes on this CPU.
//!
//! The wheel is compiled for baseline x86-64 (SSE2); every fast path is
//! chosen at run time. This module answers, family by family, with the same
//! test the family's own dispatch makes (for `multiversion` kernels, by
//! asking `multiversion` itself through a probe cloned for the same
//! targets), so `ferrograd.__config__.show()` reports what really runs.
//! A family added with its own dispatch adds its row to [`paths`].

/// The CPU features ferrograd's kernels or their libraries test for, as
/// `(name, present)`. AMX counts only when the kernel has enabled its
/// register state (XCR0), as the instructions fault otherwise.
pub fn cpu_features() -> Vec<(&'static str, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let (amx_tile, amx_bf16) = amx();
        vec![
            ("sse4.2", has!("sse4.2")),
            ("avx", has!("avx")),
            ("avx2", has!("avx2")),
            ("fma", has!("fma")),
            ("f16c", has!("f16c")),
            ("avx512f", has!("avx512f")),
            ("avx512vl", has!("avx512vl")),
            ("avx512bw", has!("avx512bw")),
            ("avx512dq", has!("avx512dq")),
            ("avx512_bf16", has!("avx512bf16")),
            ("amx_tile", amx_tile),
            ("amx_bf16", amx_bf16),
        ]
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec::new()
    }
}

/// `(AMX-TILE, AMX-BF16)`: CPUID leaf 7 EDX bits 24 and 22, with the tile
/// state (XCR0 bits 17 and 18) enabled by the operating system.
#[cfg(target_arch = "x86_64")]
fn amx() -> (bool, bool) {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // Leaves above the maximum that leaf 0 reports are not read.
    let max_leaf = __cpuid(0).eax;
    let osxsave = __cpuid(1).ecx & (1 << 27) != 0;
    if max_leaf < 7 || !osxsave {
        return (false, false);
    }
    // SAFETY: OSXSAVE is set, so XGETBV is available and XCR0 readable.
    let xcr0 = unsafe { xcr0() };
    let os_tiles = xcr0 & (0b11 << 17) == (0b11 << 17);
    let edx7 = __cpuid_count(7, 0).edx;
    (
        os_tiles && edx7 & (1 << 24) != 0,
        os_tiles && edx7 & (1 << 22) != 0,
    )
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "xsave")]
unsafe fn xcr0() -> u64 {
    std::arch::x86_64::_xgetbv(0)
}

/// The clone `multiversion` dispatches to for the targets every
/// multiversioned kernel in this crate lists (`tests/test_config.py` checks
/// that they all list exactly these).
#[multiversion::multiversion(targets(
    "x86_64+avx+avx2+fma+avx512f+avx512vl+avx512bw+avx512dq",
    "x86_64+avx+avx2+fma"
))]
fn multiversion_path() -> &'static str {
    // Constants in each clone: true where that clone was compiled with the feature.
    let avx512 = multiversion::target::target_cfg_f!(target_feature = "avx512f");
    let avx2 = multiversion::target::target_cfg_f!(target_feature = "avx2");
    match (avx512, avx2) {
        (true, _) => "avx512",
        (false, true) => "avx2",
        (false, false) => "baseline",
    }
}

/// The `gemm` crate's choice (gemm-common's `init_gemm_fn`, built with its
/// `x86-v4` feature): AVX-512F, else FMA (its AVX2 kernels), else scalar.
fn gemm_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512";
        }
        if std::arch::is_x86_feature_detected!("fma") {
            return "avx2";
        }
    }
    "scalar"
}

/// Each kernel family with the path it takes here: `(family, path, what
/// the family covers)`.
pub fn paths() -> Vec<(&'static str, &'static str, &'static str)> {
    let vector = multiversion_path();
    let bf16 = super::bf16_gemm::Path::current();
    let small = match super::small_gemm::isa() {
        super::small_gemm::Isa::Avx512 => "avx512",
        super::small_gemm::Isa::Avx2 => "avx2",
        super::small_gemm::Isa::Portable => "scalar",
    };
    #[cfg(target_arch = "x86_64")]
    let conv = match super::conv_direct::available_isa::<f32>() {
        Some(super::small_gemm::Isa::Avx512) => "avx512 direct",
        Some(_) => "avx2 direct",
        None => "im2col + gemm",
    };
    #[cfg(not(target_arch = "x86_64"))]
    let conv = "im2col + gemm";
    #[cfg(target_arch = "x86_64")]
    let (avx512f, fma) = (
        std::arch::is_x86_feature_detected!("avx512f"),
        std::arch::is_x86_feature_detected!("fma"),
    );
    #[cfg(not(target_arch = "x86_64"))]
    let (avx512f, fma) = (false, false);
    vec![
        (
            "vector",
            vector,
            "elementwise maps, reductions, softmax, norms, optimizer steps, RNN gates, \
             compiled (fused) programs",
        ),
        ("gemm", gemm_path(), "matrix products (the gemm crate)"),
        (
            "small_gemm",
            small,
            "matrix products below 2^18 multiply-adds (register tiles)",
        ),
        (
            "conv",
            conv,
            "convolution layers whose shapes suit the direct kernels",
        ),
        (
            "norm_f32",
            if avx512f { "avx512" } else { vector },
            "float32 batch/layer norm statistics",
        ),
        (
            "randn",
            if fma { "fma" } else { "baseline" },
            "normal samples (Box-Muller blocks of 16)",
        ),
        (
            "vmath",
            match super::vmath::isa() {
                super::vmath::Isa::Avx512 => "avx512",
                super::vmath::Isa::Avx2 => "avx2",
                super::vmath::Isa::Portable => "portable",
            },
            "float32 math functions (exp/log families, inverse trigonometry, erf), \
             activations and clamps, max pooling's windows, pdist's distances",
        ),
        (
            "convert",
            if super::convert::has_f16c() {
                "f16c"
            } else {
                "portable"
            },
            "float32 <-> float16 conversions (bfloat16's are integer rounding, vectorised)",
        ),
        (
            "transpose",
            if super::transpose::block_side(4).is_some() {
                "avx2"
            } else {
                "scalar"
            },
            "blocks of a transposing copy (contiguous() of a transposed or permuted view)",
        ),
        (
            "extreme_rows",
            if super::vmath::isa() >= super::vmath::Isa::Avx2 {
                "avx2"
            } else {
                "exact"
            },
            "amax/amin of float32/float64 over a leading dimension (four rows a step)",
        ),
        (
            "checksum",
            if crate::checksum::has_crc32_path() {
                "sse4.2"
            } else {
                "table"
            },
            "CRC-32C of saved checkpoints",
        ),
        (
            "bf16",
            bf16.name(),
            "bfloat16 matrix products (matmul, mm, bmm, addmm, linear and their gradients)",
        ),
        (
            "amx",
            if bf16 == super::bf16_gemm::Path::Amx {
                "bf16 tiles"
            } else {
                "none"
            },
            "bfloat16 matrix products when the bf16 path is amx",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_agrees_with_the_cpu() {
        let features: std::collections::HashMap<_, _> = cpu_features().into_iter().collect();
        let want = if features.is_empty() {
            "baseline"
        } else if ["avx512f", "avx512vl", "avx512bw", "avx512dq", "avx2", "fma"]
            .iter()
            .all(|f| features[f])
        {
            "avx512"
        } else if ["avx2", "fma", "avx"].iter().all(|f| features[f]) {
            "avx2"
        } else {
            "baseline"
        };
        assert_eq!(multiversion_path(), want);
        assert!(paths().iter().all(|(_, path, _)| !path.is_empty()));
    }
}
