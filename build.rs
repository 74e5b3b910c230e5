//! Tells the test suite whether the shared corpus of real recordings is present, so that the
//! corpus tests run when it is and are reported as ignored (with the reason) when it is not.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(rewind_corpus)");
    println!("cargo::rerun-if-env-changed=REWIND_CORPUS");
    let dir = match std::env::var_os("REWIND_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default())
            .join("../shared/corpus"),
    };
    println!("cargo::rerun-if-changed={}", dir.display());
    if dir.join("EXPECTED.md").is_file() {
        println!("cargo::rustc-cfg=rewind_corpus");
    }
}
