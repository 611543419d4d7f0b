/// The arithmetic mean; 0.0 for no values.
pub fn mean(values: &[i64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let sum: i64 = values.iter().sum();
    sum / values.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves() {
        assert_eq!(mean(&[1, 2]), 1.5);
    }
}
