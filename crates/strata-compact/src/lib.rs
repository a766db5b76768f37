//! strata-compact (placeholder; see ARCHITECTURE.md).
#![deny(missing_docs)]
