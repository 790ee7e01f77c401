//! Writes each fuzz target's seeds as its cargo-fuzz starting corpus
//! (`fuzz/corpus/<target>/seed-N`) and its tokens as a libFuzzer dictionary
//! (`fuzz/dict/<target>.dict`), so a run by hand starts from valid inputs
//! instead of nothing. `fuzz/run` calls it; both folders are ignored by git.
//!
//! Usage: `cargo run -p alcove-fuzz --example seed_corpus [FUZZ_DIR]`.

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let fuzz_dir = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz"),
        PathBuf::from,
    );
    for target in alcove_fuzz::TARGETS {
        let corpus = fuzz_dir.join("corpus").join(target.name);
        std::fs::create_dir_all(&corpus)?;
        let seeds = alcove_fuzz::seeds::inputs(target.name);
        for (i, seed) in seeds.iter().enumerate() {
            std::fs::write(corpus.join(format!("seed-{i}")), seed)?;
        }
        let dict_dir = fuzz_dir.join("dict");
        std::fs::create_dir_all(&dict_dir)?;
        let dict: String = alcove_fuzz::seeds::dictionary(target.name)
            .iter()
            .chain(alcove_fuzz::seeds::extremes())
            .map(|token| format!("\"{}\"\n", dict_escape(token)))
            .collect();
        std::fs::write(dict_dir.join(format!("{}.dict", target.name)), dict)?;
        println!("{}: {} seeds", target.name, seeds.len());
    }
    Ok(())
}

/// A token in libFuzzer's dictionary syntax: printable ASCII as is, `\` and
/// `"` escaped, every other byte as `\xNN`.
fn dict_escape(token: &str) -> String {
    token
        .bytes()
        .map(|byte| match byte {
            b'\\' | b'"' => format!("\\{}", char::from(byte)),
            b' '..=b'~' => char::from(byte).to_string(),
            _ => format!("\\x{byte:02X}"),
        })
        .collect()
}
