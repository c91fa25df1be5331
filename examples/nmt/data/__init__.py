"""Parallel text in, batches out: sources, the TSV, dictionary and date formats, batching.

``sources.load_splits`` reads a dataset as ``{"source", "target"[, "alignment"]}``
splits (``tsv``, ``pronunciations``/``pronouncing_dictionary`` and
``date_normalization``/``dates`` are some of its sources; ``splitting``
carves source-disjoint splits);
``batching.make_batches`` turns a split into
``((source_ids, target_in_ids), target_out_ids)`` batches; ``statistics``
counts them and their target tokens.
"""
