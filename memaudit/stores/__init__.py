"""Importers for exported Mem0, Letta and A-Mem stores, adjudication and union-package audits."""
