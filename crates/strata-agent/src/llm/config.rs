//! Where the HTTP client points and how patient it is, read from the environment or built in
//! code.
//!
//! Timeouts split the wait into three phases so each failure names its phase: connecting,
//! waiting for the response head, and silence between body bytes. A single total timeout would
//! cut off long but healthy answers.

use std::fmt;
use std::time::Duration;

use super::RetryPolicy;

/// Configuration of [`HttpChatModel`](super::HttpChatModel).
#[derive(Clone, PartialEq)]
pub struct LlmConfig {
    /// API base without the `/chat/completions` path, e.g. `https://api.deepseek.com`.
    pub base_url: String,
    /// Model name sent in requests built from this configuration.
    pub model: String,
    /// Bearer token; `None` sends no `Authorization` header (local servers).
    pub api_key: Option<String>,
    /// Limit on establishing TCP and TLS.
    pub connect_timeout: Duration,
    /// Limit from sending the request to receiving the response head. It also covers the
    /// connect, so keep it above `connect_timeout`.
    pub first_byte_timeout: Duration,
    /// Limit on silence between body chunks; SSE keep-alive comments reset it.
    pub idle_timeout: Duration,
    /// Retries after the first attempt (so at most `max_retries + 1` attempts).
    pub max_retries: u32,
    /// Delays between attempts.
    pub backoff: Backoff,
}

/// Exponential backoff: attempt n waits `initial · 2^(n-1)`, capped at `max`, spread by
/// `jitter` so that clients failing together do not retry together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// Delay before the first retry.
    pub initial: Duration,
    /// Largest delay; a server `Retry-After` above it ends retrying instead of stalling.
    pub max: Duration,
    /// Fraction in `[0, 1]`: each delay is scaled by a random factor in `[1 - jitter, 1 + jitter]`
    /// (then capped at `max`). 0 makes delays exact, which tests want.
    pub jitter: f64,
}

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff {
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            jitter: 0.2,
        }
    }
}

/// Why a configuration could not be built or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// An environment variable holds bytes that are not UTF-8.
    #[error("environment variable {var} is not valid unicode")]
    NotUnicode {
        /// The variable's name.
        var: String,
    },
    /// The base URL is not an absolute http(s) URL.
    #[error("base url {base_url:?} is not an absolute http or https url")]
    InvalidBaseUrl {
        /// The rejected value.
        base_url: String,
    },
    /// The API key cannot be sent as an HTTP header (control characters, non-ASCII).
    #[error("api key contains characters not allowed in an http header")]
    InvalidApiKey,
    /// The HTTP client could not be built (TLS setup).
    #[error("http client setup failed: {detail}")]
    Client {
        /// The error chain.
        detail: String,
    },
}

impl LlmConfig {
    /// DeepSeek's public API, the default base.
    pub const DEFAULT_BASE_URL: &'static str = "https://api.deepseek.com";
    /// The default model.
    pub const DEFAULT_MODEL: &'static str = "deepseek-chat";

    /// A configuration for `base_url` and `model` with no key and default timeouts (connect
    /// 10 s, first byte 60 s, idle 60 s) and retries (4, backoff 0.5 s → 30 s, jitter 0.2).
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> LlmConfig {
        LlmConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            max_retries: 4,
            backoff: Backoff::default(),
        }
    }

    /// Reads `STRATA_BASE_URL` (default [`Self::DEFAULT_BASE_URL`]), `STRATA_MODEL` (default
    /// [`Self::DEFAULT_MODEL`]) and the key from `DEEPSEEK_API_KEY`, else `STRATA_API_KEY`.
    /// Empty variables count as unset.
    pub fn from_env() -> Result<LlmConfig, ConfigError> {
        let mut first_error = None;
        let config = LlmConfig::from_lookup(|var| match std::env::var(var) {
            Ok(value) => Some(value),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(_)) => {
                first_error.get_or_insert(ConfigError::NotUnicode {
                    var: var.to_owned(),
                });
                None
            }
        });
        match first_error {
            Some(error) => Err(error),
            None => Ok(config),
        }
    }

    /// [`Self::from_env`] over any variable source, so it can be tested without touching the
    /// process environment.
    pub fn from_lookup(mut lookup: impl FnMut(&str) -> Option<String>) -> LlmConfig {
        let mut get = |var: &str| lookup(var).filter(|value| !value.is_empty());
        let base_url = get("STRATA_BASE_URL").unwrap_or_else(|| Self::DEFAULT_BASE_URL.into());
        let model = get("STRATA_MODEL").unwrap_or_else(|| Self::DEFAULT_MODEL.into());
        let api_key = get("DEEPSEEK_API_KEY").or_else(|| get("STRATA_API_KEY"));
        LlmConfig {
            api_key,
            ..LlmConfig::new(base_url, model)
        }
    }

    /// The endpoint: the base without trailing slashes, then `/chat/completions`.
    pub fn chat_completions_url(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// The retry policy these settings describe.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries,
            backoff: self.backoff,
        }
    }
}

/// Prints everything but the key, so configurations can be logged.
impl fmt::Debug for LlmConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

#[cfg(test)]
mod tests;
