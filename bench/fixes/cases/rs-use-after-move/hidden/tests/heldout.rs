use names::describe;

#[test]
fn empty() {
    assert_eq!(describe(vec![]), (String::new(), 0));
}
