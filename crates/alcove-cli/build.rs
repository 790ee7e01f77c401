//! Link alcove's binaries for a fast start.
//!
//! - As position-dependent executables (`-no-pie`): a PIE binary's loader
//!   applies ~17,000 relative relocations at every start, touching every
//!   page of `.data.rel.ro` (bench/notes.md, issue 16); a fixed-address
//!   binary has none to apply.
//! - In a release build of `alcove` on x86-64 Linux, where the linker is
//!   LLD (Rust's default there since 1.90): the functions a start runs
//!   are laid out together, in the order of `startup-order.txt`
//!   (`bench/startup-order` writes it). They were spread over 11 MB of
//!   code, so a start faulted in and missed on pages all over it. A symbol
//!   the list names and the binary lacks is skipped: a stale list costs
//!   speed, never correctness.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=startup-order.txt");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    if target("CARGO_CFG_TARGET_OS") != "linux" {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    let lld_target = target("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && target("CARGO_CFG_TARGET_ENV") == "gnu"
        && target("PROFILE") == "release";
    let order = std::path::Path::new(&target("CARGO_MANIFEST_DIR")).join("startup-order.txt");
    if lld_target && order.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=alcove=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=alcove=-Wl,--no-warn-symbol-ordering");
    }
}
