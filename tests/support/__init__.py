"""Shared test helpers imported by their full name (tests.support.X): model builders, fake libraries, fake hosts."""
