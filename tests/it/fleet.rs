//! Integration tests for `fleet`.
