"""Fit and resume: the model of ``--architecture``, compiled and trained to the end.

``fit`` batches the splits (``examples.nmt.host.batches``, a
``keras.utils.PyDataset`` on every backend), builds the model under the ``--strategy``
(``examples.nmt.training.distribution``: the global batch split across
devices and processes), starts the output bias from the
target unigram frequencies (``--output-bias unigram``), keeps a moving
average of the weights if ``--ema`` (validated and saved in their place), computes in the
``--precision`` dtype policy (the model it returns and saves is float32), trains with
``RunCheckpoint`` (``examples.common.checkpointing``: a killed run resumes
after its last finished epoch, on the same batches; the last
``--keep-checkpoints`` epochs' weights stay in ``checkpoints/``) and saves the best
epoch's ``model.keras``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Sequence
from typing import Any

import keras

from examples.common.batches import for_fit
from examples.common.checkpointing import STATE
from examples.common.checkpointing import RunCheckpoint
from examples.common.metrics import MaskedAccuracy
from examples.nmt import backend
from examples.nmt import runs
from examples.nmt.config import Config
from examples.nmt.host import batches
from examples.nmt.models.losses import MaskedCrossentropy
from examples.nmt.models.rnn import build_model
from examples.nmt.models.transformer import build_transformer
from examples.nmt.training import distribution


def learning_rate_schedule(args: Config, steps_per_epoch: int):
    """Linear warm-up to ``--learning-rate``, then cosine decay to 0 at the last epoch."""
    total = max(args.epochs * steps_per_epoch, 1)
    warmup = min(args.warmup_steps, total // 2)
    return keras.optimizers.schedules.CosineDecay(
        0.0,
        decay_steps=max(total - warmup, 1),
        warmup_target=args.learning_rate,
        warmup_steps=warmup,
    )


def tensorboard_callbacks(args: Config) -> list[keras.callbacks.Callback]:
    if importlib.util.find_spec("tensorboard") is None:  # tf.summary needs it
        print("TensorBoard is not installed: no logs/ (pip install tensorboard).")
        return []
    return [keras.callbacks.TensorBoard(os.path.join(args.output_dir, "logs"), write_graph=False)]


def make_model(args: Config, vocabularies: Any) -> keras.Model:
    """The ``--architecture`` model, sized by the arguments and the vocabularies."""
    sizes = len(vocabularies.source), len(vocabularies.target)
    if args.architecture == "transformer":
        return build_transformer(
            *sizes,
            d_model=args.d_model,
            num_heads=args.num_heads,
            layers=args.layers,
            ff_dim=args.ff_dim,
            dropout=args.dropout,
            alignment_layer=args.alignment_layer,
        )
    return build_model(
        *sizes,
        embedding_dim=args.embedding_dim,
        units=args.units,
        attention=args.attention,
        decoder=args.decoder,
        rnn=args.rnn,
        num_heads=args.num_heads,
        dropout=args.dropout,
        encoder_layers=args.encoder_layers,
        attention_units=args.attention_units,
    )


def compiled_model(
    args: Config,
    vocabularies: Any,
    train_batches: Any,
    steps_per_epoch: int,
    log_prior: Any = None,
) -> keras.Model:
    """``make_model``, its output bias (``--output-bias``), compiled as ``fit`` trains it.

    With ``--output-bias unigram`` the bias starts at ``log_prior`` (the
    target unigram prior of ``train_batches``, when the caller counted it),
    or at ``batches.target_log_prior(train_batches)``.

    Adam on the warm-up and cosine schedule (AdamW with ``--weight-decay``,
    which leaves the biases alone), ``--clipnorm``, ``--ema``, the masked
    cross-entropy with ``--label-smoothing``, ``--jit-compile``.
    """
    model = make_model(args, vocabularies)
    if args.output_bias == "unigram":
        if log_prior is None:
            log_prior = batches.target_log_prior(train_batches, len(vocabularies.target))
        model.output_layer.bias.assign(log_prior)
    options = dict(
        learning_rate=learning_rate_schedule(args, steps_per_epoch),
        clipnorm=args.clipnorm or None,
        use_ema=args.ema > 0,
        ema_momentum=args.ema or 0.99,
    )
    if args.weight_decay:
        optimizer = keras.optimizers.AdamW(weight_decay=args.weight_decay, **options)
        optimizer.exclude_from_weight_decay(var_names=["bias"])
    else:
        optimizer = keras.optimizers.Adam(**options)
    model.compile(
        optimizer=optimizer,
        loss=MaskedCrossentropy(args.label_smoothing),
        metrics=[MaskedAccuracy()],
        # JAX runs its step compiled or op by op: always compiled. TensorFlow
        # runs a graph either way, with XLA on --jit-compile; PyTorch eagerly.
        jit_compile=args.jit_compile or backend.name() == "jax",
    )
    return model


def float32_copy(model: keras.Model, args: Config, vocabularies: Any) -> keras.Model:
    """``model``'s weights in the same model built in float32: what a run saves and evaluates.

    Mixed precision keeps float32 variables and computes in a lower dtype;
    the copy computes in float32, so ``model.keras``, its SavedModel and the
    run's own evaluation do not depend on the precision that trained them
    (bfloat16 decoding is slow on hardware without it, and less exact).
    """
    copy = make_model(args, vocabularies)
    copy.set_weights(model.get_weights())
    return copy


def backup_from_the_chief(distributed: distribution.Distribution, backup: str) -> None:
    """With several processes, the chief's backup of a killed run, copied to the others.

    Only the chief keeps the run; the others must resume from the same epoch
    and weights, and load them as it does (with several processes, each
    assignment to a variable is a collective step of all of them).
    """
    if distributed.processes == 1:
        return
    state = distribution.from_the_chief(distributed, RunCheckpoint.load_state(backup))
    if state is None:
        return
    for name in sorted({state["weights"], state["best_weights"]} - {None}):
        path = os.path.join(backup, name)
        data = b""
        if distributed.is_chief:
            with open(path, "rb") as file:
                data = file.read()
        data = distribution.bytes_from_the_chief(distributed, data)
        if not distributed.is_chief:
            with open(path, "wb") as file:
                file.write(data)
    if not distributed.is_chief:
        runs.write_json(state, os.path.join(backup, STATE))


def early_stopping_callback(args: Config) -> keras.callbacks.EarlyStopping:
    """Stops on ``val_loss`` after ``--patience`` epochs without a lower one; ``off``: never.

    ``--patience 0`` is Keras' own meaning, stop at the first epoch that is not better; ``off``
    (None) waits longer than the run, so a schedule (cosine decay to 0) reaches its end. Either
    way the best epoch's weights are the run's result (``RunCheckpoint.restore_best``).
    """
    patience = args.epochs + 1 if args.patience is None else args.patience
    return keras.callbacks.EarlyStopping(patience=patience, verbose=1)


def fit(
    args: Config,
    splits: dict[str, Any],
    vocabularies: Any,
    extra_callbacks: Sequence[keras.callbacks.Callback] = (),
    distributed: distribution.Distribution | None = None,
) -> tuple[keras.Model, dict[str, Any]]:
    """Trains (or resumes) to the end; saves the best epoch's ``model.keras``."""
    out = args.output_dir
    # The first pass (counted) and the batches of every epoch, one after another (the
    # passes' orders do not depend on how many iterators Keras makes, so a resumed run
    # skips to the same batches), over one encoding of the split.
    first_pass, stream = batches.training_batches(
        splits["train"],
        vocabularies,
        args.batch_size,
        max_length=args.max_length,
        seed=args.seed,
        passes=args.epochs + 1,  # bucketing: a pass may hold a few batches fewer
        bucket_step=args.length_bucket_step,
    )
    validation = batches.make_batches(  # in length buckets: far less padding than in order
        splits["validation"],
        vocabularies,
        args.batch_size,
        max_length=args.max_length,
        bucket_step=args.length_bucket_step,
        bucketed=True,
    )
    steps_per_epoch, log_prior = batches.count_and_prior(first_pass, len(vocabularies.target))
    validation_steps = batches.count_batches(validation)  # no "ran out of data" warning
    backup = os.path.join(out, "backup")
    os.makedirs(backup, exist_ok=True)
    early_stopping = early_stopping_callback(args)
    # With --ema: the averages in the model's variables for validation and the best epoch's file.
    averages = keras.callbacks.SwapEMAWeights() if args.ema else None
    checkpoint = RunCheckpoint(
        backup,
        early_stopping,
        os.path.join(out, runs.HISTORY),
        averages=averages,
        run_directory=out,
        keep_checkpoints=args.keep_checkpoints,  # the last epochs' weights, in checkpoints/
        seed=args.seed,  # PyTorch's dropout masks, per epoch
    )

    mixed = args.precision != "float32"
    if mixed:
        keras.mixed_precision.set_global_policy(args.precision)
    distributed = distributed or distribution.Distribution()
    fed = {"train": stream, "validation": validation}
    if backend.compiles_per_shape(args.jit_compile):  # full batches, split over the replicas
        rows = -(-args.batch_size // distributed.replicas) * distributed.replicas
        fed = {name: batches.pad_batches(fed[name], rows, backend.LENGTH_BUCKET) for name in fed}
    fed = {name: distribution.shard_batches(fed[name], distributed) for name in fed}
    try:
        with distributed.scope():
            model = compiled_model(args, vocabularies, first_pass, steps_per_epoch, log_prior)
            backup_from_the_chief(distributed, backup)
            done = checkpoint.restore(model)
        print(
            f"Training {model.name}: {model.count_params():,} parameters, "
            f"{steps_per_epoch} steps an epoch, on {distributed.replicas} replicas."
        )
        if done:
            print(f"Resuming after epoch {done} (backup in {backup}).")
        # Every epoch's batches: bucketing makes the batch count vary a little by pass. A
        # resumed run skips the batches of the finished epochs, so that it
        # trains on the same batches as an uninterrupted one.
        model.fit(
            for_fit(fed["train"].skip(done * steps_per_epoch)),
            steps_per_epoch=steps_per_epoch,
            validation_data=for_fit(fed["validation"], repeat=True),
            validation_steps=validation_steps,
            initial_epoch=done,
            epochs=done if checkpoint.state["stopped"] else args.epochs,
            callbacks=[
                *([averages] if averages else []),
                early_stopping,
                checkpoint,
                *tensorboard_callbacks(args),
                *extra_callbacks,
            ],
            verbose=1,
            shuffle=False,
        )
    finally:
        if mixed:
            keras.mixed_precision.set_global_policy("float32")
    state = checkpoint.state
    checkpoint.restore_best(model)
    if mixed:
        with distributed.scope():
            model = float32_copy(model, args, vocabularies)
    summary = {
        "best_epoch": state["best_epoch"] + 1,
        "best_val_loss": state["best_value"],
        "epochs": state["epochs_done"],
        "train_seconds": state["train_seconds"],
    }
    print(
        f"Best epoch: {summary['best_epoch']} of {summary['epochs']} "
        f"(val_loss {summary['best_val_loss']:.4f}); model.keras holds its weights."
    )
    runs.save_model(model, os.path.join(out, runs.MODEL))
    runs.write_json(summary, os.path.join(out, runs.TRAINING))  # training is done
    shutil.rmtree(backup)
    return model, summary
