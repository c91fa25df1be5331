"""The translation models: the decoding interface, the RNN, the Transformer, the search.

``decoding`` is the interface (``initial_state``/``step``) that ``rnn.Seq2Seq``
and ``transformer.Transformer`` implement; ``search`` holds the greedy and
beam searches over it; ``losses`` and ``metrics`` are what training compiles.
"""
