use window::pair_sums;

#[test]
fn short_inputs() {
    assert_eq!(pair_sums(&[]), Vec::<i32>::new());
    assert_eq!(pair_sums(&[4]), Vec::<i32>::new());
    assert_eq!(pair_sums(&[1, 1]), vec![2]);
}
