"""nvcc, the build cache, the forbidden-library check."""
