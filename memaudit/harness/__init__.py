"""The plant / disturb / probe / score QA harness (the memory-eval-harness chapter and the 30-session memory bench)."""
