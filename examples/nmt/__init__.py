"""Attention-based neural machine translation, run as ``python -m examples.nmt.train``.

Modules:
    data: ``load_splits`` (TFDS catalogue, ``tsv:PATH``, ``folder:PATH``, the
        default ``date_normalization``), plus the vocabulary and batching API.
    vocabulary: standardization and word vocabularies (0 = padding).
    batching: ``make_batches`` -> ``((source_ids, target_in_ids), target_out_ids)``.
    tsv: the Tatoeba/Anki ``English<TAB>Other`` format.
    dates, date_normalization: the offline date task and its TFDS builder.
    decoding: greedy and beam search over a ``step_fn``.
    model: ``Seq2Seq``/``build_model`` (Luong- and Bahdanau-style decoders)
        with ``initial_state`` and ``step(ids, state, memory)``; ``step_fn``.
    train: ``python -m examples.nmt.train``: training, evaluation, export.
    checkpointing: resumable training (``RunCheckpoint``).
    runs: a run's folder: loading, safe writes, plots, CLI helpers.
    evaluate: BLEU, chrF, exact match and alignment accuracy of a split.
    export: the ``translate(strings)`` SavedModel.
    translate: ``python -m examples.nmt.translate --model DIR "sentence" ...``.
"""
