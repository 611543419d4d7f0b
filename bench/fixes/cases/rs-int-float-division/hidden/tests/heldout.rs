use mean::mean;

#[test]
fn edge_cases() {
    assert_eq!(mean(&[]), 0.0);
    assert_eq!(mean(&[-3, 3, 6]), 2.0);
}
