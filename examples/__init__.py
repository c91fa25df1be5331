"""Runnable examples of keras_attention; run them from the repository root."""
