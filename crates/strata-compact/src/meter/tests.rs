//! Unit tests of the meter module.
