"""Locate each failure: a policy's store scored against the certified package optimum beside what it
injected and what the reader answered, every probe attributed to write, retrieval or the reader."""
