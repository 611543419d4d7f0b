/// The sum of all bytes, as a number that does not wrap.
pub fn byte_sum(data: &[u8]) -> u32 {
    let mut total: u8 = 0;
    for b in data {
        total += b;
    }
    total as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_sum() {
        assert_eq!(byte_sum(&[200, 100]), 300);
    }
}
