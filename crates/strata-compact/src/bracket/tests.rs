//! Unit tests of the bracket module.
