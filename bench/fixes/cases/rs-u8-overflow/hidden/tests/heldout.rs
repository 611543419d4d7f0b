use checksum::byte_sum;

#[test]
fn many() {
    assert_eq!(byte_sum(&[255; 4]), 1020);
    assert_eq!(byte_sum(&[]), 0);
}
