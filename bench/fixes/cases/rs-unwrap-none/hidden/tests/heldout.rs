use std::collections::HashMap;
use ports::port;

#[test]
fn configured() {
    let config = HashMap::from([("db".to_string(), 5432)]);
    assert_eq!(port(&config, "db"), 5432);
}
