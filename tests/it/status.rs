//! Integration tests for `status`.
