//! Records how the extension was built, for `ferrograd.__config__.show()`:
//! the git commit (given by `FERROGRAD_GIT_COMMIT`), the compiler, the profile, the target and the
//! instruction-set features the code was compiled for (the baseline every
//! run-time dispatch starts from).

use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=FERROGRAD_GIT_COMMIT");
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
