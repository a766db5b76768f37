//! strata-agent (placeholder; see ARCHITECTURE.md).
#![deny(missing_docs)]
