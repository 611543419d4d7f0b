use edition::doubled;

#[test]
fn empty() {
    assert!(doubled(&[]).is_empty());
}
