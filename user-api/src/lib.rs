//! The C API of Metron.
