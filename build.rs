//! Records how the extension was built, for `ferrograd.__config__.show()`:
//! the git commit (given by `FERROGRAD_GIT_COMMIT`), the compiler, the profile, the target and the
//! instruction-set features the code was compiled for (the baseline every
//! run-time dispatch starts from).

use std::path::{Path, PathBuf};
use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// Every `.rs` file under `dir`, by path.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// FNV-1a (64 bits) over each Rust source's path (relative, `/`-separated,
/// sorted) and bytes: the test suite computes the same over a checkout and
/// refuses to run against an extension built from other sources.
fn source_hash() -> String {
    let mut files = vec![PathBuf::from("build.rs")];
    rust_files(Path::new("src"), &mut files);
    let mut named: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|p| (p.to_string_lossy().replace('\\', "/"), p))
        .collect();
    named.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, path) in &named {
        eat(name.as_bytes());
        eat(&[0]);
        eat(&std::fs::read(path).unwrap_or_default());
        eat(&[0]);
    }
    format!("{h:016x}")
}

fn main() {
    println!("cargo:rerun-if-env-changed=FERROGRAD_GIT_COMMIT");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=FERROGRAD_SOURCE_HASH={}", source_hash());
    // Only from the environment (`tools/build-wheel` sets it): reading git
    // here would need a rerun, and so a rebuild of the crate, after every
    // commit.
    let commit = std::env::var("FERROGRAD_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let rustc_version = output(&rustc, &["--version"]).unwrap_or_else(|| "unknown".to_string());
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    println!("cargo:rustc-env=FERROGRAD_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=FERROGRAD_BUILD_RUSTC={rustc_version}");
    println!(
        "cargo:rustc-env=FERROGRAD_BUILD_PROFILE={} (opt-level {})",
        env("PROFILE"),
        env("OPT_LEVEL")
    );
    println!("cargo:rustc-env=FERROGRAD_BUILD_TARGET={}", env("TARGET"));
    println!(
        "cargo:rustc-env=FERROGRAD_BUILD_TARGET_FEATURES={}",
        env("CARGO_CFG_TARGET_FEATURE")
    );
}
