"""Attention-based neural machine translation, run as ``python -m examples.nmt.train``.

Laid out by role; a sentence goes text -> data -> models -> translator:

    train.py, evaluate.py, translate.py: the command lines (parse, call one
        function, exit code); ``python -m examples.nmt.data`` shows a dataset.
    text/: ``special`` (the reserved ids, owned once), ``normalization``
        (NFKC, word standardization), ``words`` (word, letter and symbol
        vocabularies) and ``sentencepiece_vocabulary``, ``vocabularies`` (a
        run's pair).
    data/: the formats: ``tsv``, ``pronunciations`` (dictionary files) and
        ``pronouncing_dictionary`` (the bundled CMUdict, offline), ``dates``
        and ``date_normalization`` (the offline date task, gold alignments),
        ``joined_words``, ``sources`` (TFDS catalogue and ``folder:PATH``
        datasets, read through TensorFlow Datasets).
    models/: ``decoding`` (the ``initial_state``/``step`` interface and
        ``search_start``, its adapter to the package's searches,
        ``keras_attention.decoding``), ``rnn`` (``Seq2Seq``, Luong- and
        Bahdanau-style decoders), ``transformer``, ``losses`` (the metric is
        ``examples.common.metrics``).
    training/: ``pipeline`` (the whole run), ``fit`` (fit and resume, with
        ``examples.common.checkpointing``'s ``RunCheckpoint``), ``recipes``,
        ``distribution``.
    host/: the one input pipeline, NumPy and ``keras.utils.PyDataset`` on
        every backend: ``splits`` (every dataset as lists of pairs, the
        source-disjoint hash splits), ``text``, ``fingerprint``,
        ``vocabularies``, ``batches`` (``((source_ids, target_in_ids),
        target_out_ids)``), ``translation`` (the translator's text steps in
        NumPy). TensorFlow only reads TFDS datasets and writes the SavedModel.
    translator: the one strings -> ids -> search -> strings function.
    evaluation: BLEU, chrF, exact match, alignment accuracy, WER and PER of a split.
    export: the ``translate(strings)`` SavedModel (``translator`` inside).
    runs: a run's folder (names, resume rules, loading, safe writes).
    plots: training curves and attention heat-maps.
    cli: what the command lines share (one-line errors, integer flags).
"""
