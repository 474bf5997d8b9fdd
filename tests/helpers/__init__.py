"""Helper programs and fixtures-builders for tests (not test modules themselves)."""
