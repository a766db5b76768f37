//! strata-store (placeholder; see ARCHITECTURE.md).
#![deny(missing_docs)]
