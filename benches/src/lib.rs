//! Benchmark support code.
