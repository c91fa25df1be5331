"""The translation models: the decoding interface, the RNN, the Transformer.

``decoding`` is the interface (``initial_state``/``step``) that ``rnn.Seq2Seq``
and ``transformer.Transformer`` implement, and ``search_start``, which hands it
to the package's greedy and beam searches (``keras_attention.decoding``);
``losses`` is what training compiles, with ``examples.common.metrics``.
"""
