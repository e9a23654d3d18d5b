//! Integration tests for `bench`.
