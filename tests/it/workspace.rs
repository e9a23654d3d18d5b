//! Integration tests for `workspace`.
