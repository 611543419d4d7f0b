/// Doubles every value.
pub fn doubled(values: &[i32]) -> Vec<i32> {
    values.iter().map(|v| v * 2).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles() {
        assert_eq!(doubled(&[1, 2]), vec![2, 4]);
    }
}
