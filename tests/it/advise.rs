//! Integration tests for `advise`.
