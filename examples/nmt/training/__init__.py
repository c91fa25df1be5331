"""Training: the whole run (``pipeline``), fit and resume (``fit``, ``checkpointing``).

Also the flags' defaults by task (``recipes``) and ``tf.distribute`` (``distribution``).
"""
