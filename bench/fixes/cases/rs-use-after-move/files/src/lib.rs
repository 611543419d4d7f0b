/// The names joined with ", ", and how many there were.
pub fn describe(names: Vec<String>) -> (String, usize) {
    let joined = join(names);
    (joined, names.len())
}

fn join(names: Vec<String>) -> String {
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_names() {
        let names = vec!["ada".to_string(), "grace".to_string()];
        assert_eq!(describe(names), ("ada, grace".to_string(), 2));
    }
}
