"""Listen, Attend and Spell on real recordings: connected spoken digits (issue 61).

A waveform in, its digits out: log-mel features inside the model, a
subsampling encoder, an ``AttentionRNNCell`` decoder with location-sensitive
attention (or another of the package's, ``attention=``), greedy search from
``keras_attention.decoding``. The utterances join 2 to 7 clips of the Free
Spoken Digit Dataset, so the gold span of every digit is known, and alignment
accuracy measures what the attention learned without being told.

config: the one ``Config`` dataclass (its defaults are the default recipe).
data: WAV files -> clips -> joined utterances -> NumPy arrays -> batches.
model: the whole model, its decoding step and the greedy search.
metrics: digit error rate, exact match and alignment accuracy (NumPy).
train, evaluate, transcribe, export: the commands (``python -m examples.speech.train``).
"""
