"""Vocabulary and pure math: runs anywhere, imports nothing of solbench above it."""
