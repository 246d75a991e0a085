"""memaudit: exact, certified auditing of budgeted LLM memory writing."""

__version__ = "0.1.0"
