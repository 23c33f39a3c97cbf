"""The test suite: it mirrors the package, one folder per room; shared helpers live in tests.support."""
