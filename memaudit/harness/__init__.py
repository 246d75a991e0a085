"""The plant / disturb / probe / score QA harness (seeds 000 and 001)."""
