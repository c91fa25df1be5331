"""What every example shares, written once: each example imports it, none copies it.

runs: a run's folder (its file names, ``config.json``, resume rules, safe
    writes through a rename, weight files), and ``RunError``, the one-line
    error every command prints.
recipes: a recipe file (TOML or JSON) loaded into an example's typed
    dataclass; ``--config FILE`` and ``--set key=value``; a run's own
    ``config.json`` is a valid ``--config``.
batches: NumPy arrays -> ``keras.utils.PyDataset`` batches on every
    backend, each pass shuffled from its own seed so a resumed run skips
    to an uninterrupted run's batches.
checkpointing: ``RunCheckpoint``, resumable training (model, optimizer,
    early stopping, history and random state after every epoch).
training: ``fit_resumable``, the fit every example runs (resume, early
    stopping, the best epoch's ``model.keras``).
backend: what a run trains on (``devices``), peak GPU memory, searches
    compiled per backend (``compile_search``).
export: a SavedModel from a run of any backend, written in a TensorFlow
    process (``export_in_tensorflow``).
"""
