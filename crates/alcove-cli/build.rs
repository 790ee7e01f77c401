//! Link alcove's binaries as position-dependent executables (`-no-pie`).
//!
//! A PIE binary's loader applies ~17,000 relative relocations at every
//! start, touching every page of `.data.rel.ro` (bench/notes.md, issue 16);
//! a fixed-address binary has none to apply.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
