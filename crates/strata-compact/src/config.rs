//! Configuration of compaction and pruning, with upstream's defaults and checks
//! (persistence-compaction §5.3, §6).
//!
//! A configuration is checked once, when a [`Compactor`](crate::Compactor) or
//! [`Pruner`](crate::Pruner) is built, so a running agent never discovers a bad
//! threshold mid-turn.

use std::time::Duration;

/// The text a pruned tool result holds in place of its elided middle (the limits below
/// count it, so it lives with them).
pub const MARKER: &str = "\n\n[... tool result middle pruned ...]\n\n";

/// [`MARKER`]'s length in code points.
pub const MARKER_CHARS: usize = 39;

/// How much of the newest history a compaction keeps verbatim.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Retain {
    /// A fraction of the context window (upstream `retainRatio`, default 0.16).
    Ratio(f64),
    /// An absolute token count (upstream `retainTokens`).
    Tokens(u64),
}

/// When and how to compact.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionConfig {
    /// Compact when the next request would exceed this fraction of the context window
    /// (default 0.8). Must be in `(0, 1]`.
    pub threshold_ratio: f64,
    /// The kept tail (default 16 % of the window). Must be below the threshold.
    pub retain: Retain,
    /// Cap on the summary's generated tokens (default 8192).
    pub max_summary_tokens: u32,
    /// Extra compactions when one is not enough to get below the threshold (default 1).
    pub compaction_retries: u32,
    /// The context window, when the log's `request/context.contextWindow` should not be
    /// used (or is missing).
    pub context_window: Option<u64>,
    /// How long a summarizer may take before the attempt is recorded as failed
    /// (default 5 minutes; `None` waits forever).
    pub summary_timeout: Option<Duration>,
}

impl Default for CompactionConfig {
    fn default() -> CompactionConfig {
        CompactionConfig {
            threshold_ratio: 0.8,
            retain: Retain::Ratio(0.16),
            max_summary_tokens: 8192,
            compaction_retries: 1,
            context_window: None,
            summary_timeout: Some(Duration::from_secs(300)),
        }
    }
}

/// Thresholds derived from a configuration and a context window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The context window in tokens.
    pub context_window: u64,
    /// `floor(window × threshold_ratio)`: compact at or above this.
    pub threshold_tokens: u64,
    /// The kept tail in tokens.
    pub retain_tokens: u64,
}

impl CompactionConfig {
    /// Checks the ranges and relations upstream enforces.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let ratio_ok = self.threshold_ratio > 0.0 && self.threshold_ratio <= 1.0;
        if !ratio_ok {
            return Err(ConfigError::ThresholdRatio {
                got: self.threshold_ratio,
            });
        }
        if let Retain::Ratio(retain) = self.retain {
            if !(0.0..self.threshold_ratio).contains(&retain) {
                return Err(ConfigError::RetainRatio {
                    got: retain,
                    threshold: self.threshold_ratio,
                });
            }
        }
        if self.max_summary_tokens == 0 {
            return Err(ConfigError::MaxSummaryTokens);
        }
        if self.context_window == Some(0) {
            return Err(ConfigError::ContextWindow);
        }
        Ok(())
    }

    /// The budget for a context window of `window` tokens.
    pub fn budget(&self, window: u64) -> Result<Budget, ConfigError> {
        let threshold_tokens = (window as f64 * self.threshold_ratio).floor() as u64;
        let retain_tokens = match self.retain {
            Retain::Ratio(ratio) => (window as f64 * ratio).floor() as u64,
            Retain::Tokens(tokens) => tokens,
        };
        if retain_tokens >= threshold_tokens {
            return Err(ConfigError::RetainNotBelowThreshold {
                retain_tokens,
                threshold_tokens,
            });
        }
        Ok(Budget {
            context_window: window,
            threshold_tokens,
            retain_tokens,
        })
    }
}

/// Limits of the tool-result pruner (§6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrunerConfig {
    /// Results whose text exceeds this many code points are pruned (default 8192).
    pub threshold_chars: usize,
    /// Code points kept from the head of the text (default 4096).
    pub head_chars: usize,
    /// Code points kept from the tail of the text (default 1024).
    pub tail_chars: usize,
}

impl Default for PrunerConfig {
    fn default() -> PrunerConfig {
        PrunerConfig {
            threshold_chars: 8192,
            head_chars: 4096,
            tail_chars: 1024,
        }
    }
}

impl PrunerConfig {
    /// Checks that a pruned result always fits under the threshold.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.threshold_chars == 0 {
            return Err(ConfigError::PruneThreshold);
        }
        let pruned = self.head_chars + MARKER_CHARS + self.tail_chars;
        if pruned > self.threshold_chars {
            return Err(ConfigError::PruneLimits {
                head_chars: self.head_chars,
                tail_chars: self.tail_chars,
                threshold_chars: self.threshold_chars,
            });
        }
        Ok(())
    }
}

/// A configuration that cannot work.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The threshold ratio is outside `(0, 1]`.
    #[error("threshold ratio must be in (0, 1], got {got}")]
    ThresholdRatio {
        /// The configured value.
        got: f64,
    },
    /// The retain ratio is outside `[0, threshold)`.
    #[error(
        "retain ratio must be at least 0 and below the threshold ratio {threshold}, got {got}"
    )]
    RetainRatio {
        /// The configured value.
        got: f64,
        /// The threshold ratio it must stay below.
        threshold: f64,
    },
    /// The kept tail would not fit below the threshold for this window.
    #[error("retained tokens {retain_tokens} must be below the threshold {threshold_tokens}")]
    RetainNotBelowThreshold {
        /// The kept tail in tokens.
        retain_tokens: u64,
        /// The threshold in tokens.
        threshold_tokens: u64,
    },
    /// A zero summary cap.
    #[error("summary token cap must be positive")]
    MaxSummaryTokens,
    /// A zero context window.
    #[error("context window must be positive")]
    ContextWindow,
    /// A zero pruning threshold.
    #[error("pruning threshold must be positive")]
    PruneThreshold,
    /// Head, marker and tail do not fit under the threshold.
    #[error(
        "pruned results must fit the threshold: head {head_chars} + marker {} + tail {tail_chars} > {threshold_chars} code points",
        MARKER_CHARS
    )]
    PruneLimits {
        /// Kept head.
        head_chars: usize,
        /// Kept tail.
        tail_chars: usize,
        /// The threshold.
        threshold_chars: usize,
    },
}

#[cfg(test)]
mod tests;
