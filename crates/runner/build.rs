//! Builds the preload library of `pmscope run` (`shim/pmscope_preload.c`, the project's only
//! C) into a shared object that `launch/mod.rs` embeds with `include_bytes!`: the binary carries
//! it, so wherever `pmscope` is copied its `run` works, and nothing is installed beside it.
//! The `cc` crate finds the C compiler (honouring `CC`/`CFLAGS`); it builds archives only,
//! so the link into a `.so` is one command with that compiler.

use std::path::PathBuf;

fn main() {
    let src = "shim/pmscope_preload.c";
    println!("cargo:rerun-if-changed={src}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let lib = out.join("libpmscope_preload.so");
    let compiler = cc::Build::new()
        .cargo_metadata(false)
        .cargo_warnings(false)
        .opt_level(2)
        .get_compiler();
    let status = compiler
        .to_command()
        .args(["-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&lib)
        .arg(src)
        .args(["-ldl", "-lpthread"])
        .status()
        .unwrap_or_else(|e| {
            panic!("cannot run the C compiler for {src}: {e} (./dev setup installs gcc)")
        });
    assert!(status.success(), "the C compiler failed on {src}");
}
