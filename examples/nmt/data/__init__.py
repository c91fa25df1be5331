"""Parallel text in: the TSV, dictionary and date formats, joined words, TFDS datasets.

``tsv`` (``English<TAB>Other`` files), ``pronunciations`` (dictionary files)
and ``pronouncing_dictionary`` (the bundled CMUdict), ``dates`` (the offline
date task, with gold alignments; ``date_normalization`` is it as a TFDS
builder), ``joined_words`` (long inputs made of several words),
``sources`` (TFDS catalogue and folder datasets), ``show``
(``python -m examples.nmt.data``), ``arguments`` (the data flags). The splits, batches
and vocabularies are ``examples.nmt.host``'s.
"""
