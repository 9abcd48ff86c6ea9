"""Benchmark releases: immutable, signed, reproducible exports of approved items (docs/releases.md)."""
