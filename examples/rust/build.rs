// Tells rustc where libqwenrt is: QWENRT_LIB_DIR (the build or install lib directory).
fn main() {
    println!("cargo:rerun-if-env-changed=QWENRT_LIB_DIR");
    if let Ok(dir) = std::env::var("QWENRT_LIB_DIR") {
        println!("cargo:rustc-link-search=native={}", dir);
    }
    println!("cargo:rustc-link-lib=dylib=qwenrt");
}
