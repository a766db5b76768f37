//! strata-core.
