//! The README's example must be the example cargo builds (and
//! tests/bindings/test_rust.py runs), so that it runs as written.

#[test]
fn readme_example_is_examples_readme_rs() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(dir.join("../README.md")).unwrap();
    let start = readme.find("```rust\n").expect("a rust block in README.md") + "```rust\n".len();
    let len = readme[start..].find("```").unwrap();
    let example = std::fs::read_to_string(dir.join("examples/readme.rs")).unwrap();
    assert_eq!(&readme[start..start + len], example);
    assert!(example.lines().count() <= 12, "the README example stays short");
}
