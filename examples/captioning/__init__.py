"""Show, Attend and Tell on digit scenes, with the attention measured (README.md)."""
