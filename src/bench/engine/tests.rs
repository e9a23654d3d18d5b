//! Unit tests of the backends on a temporary directory.
