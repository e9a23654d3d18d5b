//! Integration tests for `mounts`.
