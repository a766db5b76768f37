//! Unit tests of the extractive module.
