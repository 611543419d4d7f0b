use std::collections::HashMap;

/// The port configured for `service`, or 80 when it has none.
pub fn port(config: &HashMap<String, u16>, service: &str) -> u16 {
    *config.get(service).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_port() {
        let config = HashMap::from([("db".to_string(), 5432)]);
        assert_eq!(port(&config, "web"), 80);
    }
}
