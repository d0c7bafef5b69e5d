//! ROCprofiler-SDK C types (placeholder until written).
