//! Links PMDK's libpmemobj (Debian `libpmemobj-dev`, installed by `./dev setup`).
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let found = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ]
    .iter()
    .any(|d| std::path::Path::new(d).join("libpmemobj.so").exists());
    if !found {
        println!(
            "cargo:warning=libpmemobj.so not found: install it with `./dev setup` (Debian libpmemobj-dev)"
        );
    }
    println!("cargo:rustc-link-lib=pmemobj");
}
