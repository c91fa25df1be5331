"""Ensemble decoding: several models' step functions searched as one."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence

from keras import ops

from keras_attention import validation
from keras_attention.decoding.loop import StepFn

_OWNER = "ensemble_step"
_SIGNATURE = "step(ids, state, index) -> (logits, state[, attention])"


def ensemble_step(steps: Sequence[StepFn]) -> StepFn:
    """One step function whose log-probabilities are the mean of several models'.

    Each member's logits are normalized (log-softmax, in float32) and the
    ensemble returns their mean: the mean is over log-probabilities, as in
    OpenNMT-py's ensembles (its default; `avg_raw_probs` averages
    probabilities, as fairseq does) and Marian's (a weighted sum of the
    scorers' log-probabilities)::

        log_probs = mean_m log_softmax(logits_m)                  # (N, V)

    The searches normalize what a step returns, so the ensemble's
    distribution is the normalized geometric mean of the members' (a product
    of experts, `p(y) ∝ prod_m p_m(y) ** (1 / M)`); OpenNMT-py and Marian
    score hypotheses with the mean (or sum) itself, unnormalized, which
    picks the same greedy tokens and shifts each step's beam scores by the
    log of that normalizer. A one-member ensemble is the member.

    The state is a tuple of the members' own states, member `m`'s at
    position `m`, each any nest the member's step takes: `tile_state` and
    `reorder_state` (beam search) walk the whole tuple, so every member's
    state is tiled and follows its hypothesis. The attention handed back is
    the mean of the `(N, Tv)` attention of the members that return one (all
    attend over the same source), and none when no member does.

    Works with `greedy_search`, `beam_search` and `sample`, eagerly and
    compiled, on every backend: the members run one after another inside
    each step, in `keras.ops`.

    Args:
        steps: a non-empty sequence of step functions `step(ids, state,
            index) -> (logits, state[, attention])` (see
            `keras_attention.decoding`) over the same vocabulary, on the
            same `N` rows.

    Returns:
        `step(ids, states, index) -> (log_probs, states[, attention])`,
        where `states` is the tuple of the members' states.

    Raises:
        TypeError: `steps` is not a sequence of callables.
        ValueError: `steps` is empty; or, at the first step, the members'
            logits differ in vocabulary size or their attention in shape,
            or the state is not one state per member.

    Example:

    >>> import numpy as np
    >>> from keras import ops
    >>> from keras_attention import decoding
    >>> # Two unigram "models" over [pad, end, a, b] with different states.
    >>> def unigram(probs):
    ...     table = ops.convert_to_tensor(np.log([probs]), "float32")
    ...     return lambda ids, state, index: (ops.tile(table, (ops.shape(ids)[0], 1)), state)
    >>> first = unigram([0.01, 0.09, 0.5, 0.4])  # a
    >>> second = unigram([0.01, 0.09, 0.1, 0.8])  # b
    >>> step = decoding.ensemble_step([first, second])  # sqrt(0.5 * 0.1) < sqrt(0.4 * 0.8)
    >>> states = (np.zeros((1, 2)), {"h": np.zeros((1, 3))})  # one per member, batch 1
    >>> result = decoding.greedy_search(step, states, start_id=2, end_id=1, max_length=2)
    >>> ops.convert_to_numpy(result.ids)[0, 0].tolist()
    [3, 3]

    References:
        Hinton, 2002, Training products of experts by minimizing contrastive
        divergence; Junczys-Dowmunt et al., 2018, Marian: Fast Neural Machine
        Translation in C++ (ensembles of scorers); Klein et al., 2017,
        OpenNMT: Open-Source Toolkit for Neural Machine Translation.
    """
    if callable(steps) or isinstance(steps, (str, bytes)) or not isinstance(steps, Iterable):
        validation.fail(_OWNER, "steps", f"a list of step functions {_SIGNATURE}", steps, TypeError)
    steps = tuple(steps)
    if not steps:
        validation.fail(_OWNER, "steps", "a non-empty list of step functions", [])
    for number, member in enumerate(steps):
        validation.function(_OWNER, f"steps[{number}]", member, _SIGNATURE)
    count = len(steps)

    def step(ids, state, index):
        if not isinstance(state, (tuple, list)) or len(state) != count:
            size = f" of {len(state)}" if isinstance(state, (tuple, list, dict)) else ""
            raise ValueError(
                f"{_OWNER}: `state` must be a tuple of {count} states, one per member of "
                f"`steps`. Received: a {type(state).__name__}{size}"
            )
        log_probs, states, attentions = [], [], {}  # attentions: member -> (N, Tv)
        for number, (member, member_state) in enumerate(zip(steps, state)):
            outputs = member(ids, member_state, index)
            if not isinstance(outputs, (tuple, list)) or len(outputs) not in (2, 3):
                validation.fail(
                    _OWNER,
                    f"steps[{number}]",
                    "a function returning (logits, state[, attention])",
                    outputs,
                    TypeError,
                )
            logits = ops.cast(ops.convert_to_tensor(outputs[0]), "float32")  # (N, V)
            log_probs.append(ops.log_softmax(logits, axis=-1))
            states.append(outputs[1])
            if len(outputs) == 3:
                attentions[number] = ops.cast(ops.convert_to_tensor(outputs[2]), "float32")
        _same_shapes("logits", dict(enumerate(log_probs)), "one vocabulary size V (one target)")
        _same_shapes("attention", attentions, "one shape (N, Tv) (one source)")
        mean = _mean(log_probs)
        if not attentions:
            return mean, tuple(states)
        return mean, tuple(states), _mean(list(attentions.values()))

    return step


def _mean(tensors: list):
    total = tensors[0]
    for tensor in tensors[1:]:
        total = total + tensor
    return total if len(tensors) == 1 else total / len(tensors)


def _same_shapes(what: str, tensors: dict, expected: str) -> None:
    """A ValueError naming `steps` when the members' static shapes differ (unknown dims pass).

    `tensors` maps a member's position in `steps` to its `(N, ...)` output.
    """
    shapes = {number: tuple(tensor.shape) for number, tensor in tensors.items()}
    known = [shape for shape in shapes.values() if all(isinstance(d, int) for d in shape[1:])]
    if len({(len(shape), *shape[1:]) for shape in known}) > 1:
        received = ", ".join(f"{shape} from steps[{i}]" for i, shape in shapes.items())
        raise ValueError(
            f"{_OWNER}: `steps` must return {what} of {expected}. "
            f"Received: {what} of shapes {received}"
        )
