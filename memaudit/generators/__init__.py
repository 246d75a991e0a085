"""Seeded, reproducible package generators (small, validity, natural, density-trap)."""
