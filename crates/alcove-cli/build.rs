//! Link alcove's binaries for a fast start.
//!
//! - As position-dependent executables (`-no-pie`): a PIE binary's loader
//!   applies ~17,000 relative relocations at every start, touching every
//!   page of `.data.rel.ro` (bench/notes.md, issue 16); a fixed-address
//!   binary has none to apply.
//! - In a release build of `alcove` on x86-64 Linux, where the linker is
//!   LLD (Rust's default there since 1.90, unless config or flags choose
//!   another): the functions a start runs are laid out together, in the
//!   order of `startup-order.txt` (`bench/startup-order` writes it). They were spread over 11 MB of
//!   code, so a start faulted in and missed on pages all over it. A symbol
//!   the list names and the binary lacks is skipped: a stale list costs
//!   speed, never correctness.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=startup-order.txt");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") != "linux" {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    let release_on_x86_64_gnu = target("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && target("CARGO_CFG_TARGET_ENV") == "gnu"
        && target("PROFILE") == "release";
    let order = std::path::Path::new(&target("CARGO_MANIFEST_DIR")).join("startup-order.txt");
    if release_on_x86_64_gnu && links_with_default_lld() && order.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=alcove=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=alcove=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether the link goes to the toolchain's LLD: Rust 1.90 or newer
/// (`rust-version` allows 1.89, which links with the system's `ld`, and
/// GNU ld knows no ordering file) and no linker chosen by config or flags.
fn links_with_default_lld() -> bool {
    let chosen_linker = std::env::var_os("RUSTC_LINKER").is_some()
        || std::env::var("CARGO_ENCODED_RUSTFLAGS")
            .is_ok_and(|flags| flags.contains("link") || flags.contains("fuse-ld"));
    if chosen_linker {
        return false;
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        .unwrap_or_default();
    // "rustc 1.95.0 (59807616e 2026-04-14)"
    let minor = version
        .split_whitespace()
        .nth(1)
        .and_then(|number| number.split('.').nth(1))
        .and_then(|minor| minor.parse::<u32>().ok());
    minor.is_some_and(|minor| minor >= 90)
}
