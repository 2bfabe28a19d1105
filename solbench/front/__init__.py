"""Thin front-ends: argv and pytest."""
