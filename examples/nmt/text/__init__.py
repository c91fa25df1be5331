"""Text to ids and back: the special ids, normalization, word and SentencePiece vocabularies.

Imports run one way, from the pair of vocabularies down to the ids:
``vocabularies`` -> ``words``, ``sentencepiece_vocabulary`` -> ``normalization``,
``special``.
"""
