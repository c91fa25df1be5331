"""Parallel text in, batches out: sources, the TSV and date formats, batching, statistics.

``sources.load_splits`` reads a dataset as ``{"source", "target"[, "alignment"]}``
splits (``tsv`` and ``date_normalization``/``dates`` are two of its sources);
``batching.make_batches`` turns a split into
``((source_ids, target_in_ids), target_out_ids)`` batches; ``statistics``
counts them and their target tokens.
"""
