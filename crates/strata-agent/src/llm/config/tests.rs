//! Unit tests for configuration from the environment.

use super::*;
use std::collections::HashMap;

fn from_vars(vars: &[(&str, &str)]) -> LlmConfig {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    LlmConfig::from_lookup(|var| vars.get(var).cloned())
}

#[test]
fn from_lookup_defaults_to_deepseek() {
    let config = from_vars(&[]);
    assert_eq!(config.base_url, "https://api.deepseek.com");
    assert_eq!(config.model, "deepseek-chat");
    assert_eq!(config.api_key, None);
    assert_eq!(
        config.chat_completions_url(),
        "https://api.deepseek.com/chat/completions"
    );
}

#[test]
fn from_lookup_prefers_deepseek_key_and_ignores_empty_values() {
    let config = from_vars(&[
        ("STRATA_BASE_URL", "http://127.0.0.1:8080/v1/"),
        ("STRATA_MODEL", ""),
        ("DEEPSEEK_API_KEY", "sk-deepseek"),
        ("STRATA_API_KEY", "sk-strata"),
    ]);
    assert_eq!(
        config.chat_completions_url(),
        "http://127.0.0.1:8080/v1/chat/completions"
    );
    assert_eq!(config.model, "deepseek-chat");
    assert_eq!(config.api_key.as_deref(), Some("sk-deepseek"));

    let config = from_vars(&[("DEEPSEEK_API_KEY", ""), ("STRATA_API_KEY", "sk-strata")]);
    assert_eq!(config.api_key.as_deref(), Some("sk-strata"));
}

#[test]
fn debug_redacts_the_key() {
    let config = from_vars(&[("STRATA_API_KEY", "sk-secret")]);
    let printed = format!("{config:?}");
    assert!(!printed.contains("sk-secret"), "{printed}");
    assert!(printed.contains("<redacted>"), "{printed}");
}
