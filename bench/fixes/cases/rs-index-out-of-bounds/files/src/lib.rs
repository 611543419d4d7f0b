/// Sums of each pair of neighbours: [a, b, c] -> [a+b, b+c].
pub fn pair_sums(values: &[i32]) -> Vec<i32> {
    let mut out = Vec::new();
    for i in 0..values.len() {
        out.push(values[i] + values[i + 1]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs() {
        assert_eq!(pair_sums(&[1, 2, 3]), vec![3, 5]);
    }
}
