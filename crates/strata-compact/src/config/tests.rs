//! Unit tests of configuration checks and budgets.

use super::*;

#[test]
fn defaults_are_valid_and_match_upstream_budget() {
    let config = CompactionConfig::default();
    assert_eq!(config.validate(), Ok(()));
    // persistence-compaction §5.3: a 256k window gives threshold 204,800, retain 40,960.
    let budget = config.budget(256_000).unwrap();
    assert_eq!(budget.threshold_tokens, 204_800);
    assert_eq!(budget.retain_tokens, 40_960);
    assert_eq!(PrunerConfig::default().validate(), Ok(()));
}

#[test]
fn retain_must_stay_below_threshold() {
    let config = CompactionConfig {
        retain: Retain::Ratio(0.8),
        ..CompactionConfig::default()
    };
    assert!(matches!(
        config.validate(),
        Err(ConfigError::RetainRatio { .. })
    ));
    let config = CompactionConfig {
        retain: Retain::Tokens(900),
        ..CompactionConfig::default()
    };
    assert_eq!(
        config.budget(1_000),
        Err(ConfigError::RetainNotBelowThreshold {
            retain_tokens: 900,
            threshold_tokens: 800
        })
    );
}

#[test]
fn pruner_limits_must_fit_the_threshold() {
    let config = PrunerConfig {
        threshold_chars: 100,
        head_chars: 40,
        tail_chars: 22,
    };
    // 40 + 39 + 22 = 101 > 100.
    assert!(matches!(
        config.validate(),
        Err(ConfigError::PruneLimits { .. })
    ));
    let config = PrunerConfig {
        tail_chars: 21,
        ..config
    };
    assert_eq!(config.validate(), Ok(()));
}
