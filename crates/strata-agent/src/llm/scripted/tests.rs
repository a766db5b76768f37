//! Unit tests for script loading.
