import collections
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    # Under xdist the workers share the cores: each gets its share of OpenMP
    # threads (PyTorch's intra-op pool, and NumPy's BLAS where it uses OpenMP).
    # With one thread per core in every worker, the idle threads spin on cores
    # the other worker needs: the PyTorch suite under -n 2 on 2 cores took
    # 114.6 s, against 63.2 s with one thread a worker (2026-12-07; TensorFlow
    # and JAX keep pools of their own and did not change: 311 s against 317 s,
    # 249 s against 248 s). Set before Keras imports a backend; a value the
    # user set is kept.
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    _share = (_cores or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _share)))

import keras
import numpy as np
import pytest

BACKEND = keras.backend.backend()

if BACKEND == "jax":
    # The float32 tolerances of this suite (1e-5) assume IEEE float32 matrix
    # products. JAX multiplies float32 matrices in TF32 by default on NVIDIA
    # GPUs (about 1e-3 relative error), which failed seven float32 tests on an
    # H200 (issue 10); docs/precision.md says what users get by default.
    import jax

    jax.config.update("jax_default_matmul_precision", "highest")


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


TESTS = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(TESTS, "examples")

# CI runs the suite once per backend (tensorflow, jax, torch). Tests that never
# hand a backend tensor to Keras (NumPy-only plots, HTML files, a browser) give
# the same result on all three, so they run under tensorflow only. Entries are
# node ids relative to tests/: a module, or one test (parametrizations
# included). A module can also declare `pytestmark = pytest.mark.backend_independent`.
BACKEND_INDEPENDENT = (
    "test_plotting.py",
    "test_plotting_html.py",
)
# The NMT example's tests run under tensorflow; these (node ids relative to
# tests/, or folders ending in "/") also run under jax and torch: the example's
# models, losses, searches, a whole run with its SavedModel, data parallelism, resuming.
EXAMPLES_ON_EVERY_BACKEND = (
    "examples/nmt/test_backends.py",
    "examples/nmt/training/test_data_parallel.py",
    "examples/nmt/training/test_checkpointing.py",
    "examples/nmt/models/",
    "examples/nmt/test_transformer_step_benchmark.py",
    "examples/nmt/host/test_runs.py",
    # The other examples and what they share run on NumPy and PyDataset alone: every test of
    # theirs runs on every backend unless it is marked backend_independent.
    "examples/common/",
    "examples/captioning/",
    "examples/speech/",
)
# Tests inside those modules that do pass backend tensors: they run everywhere.
BACKEND_DEPENDENT = (
    "test_plotting.py::test_accepts_backend_tensors",
    "test_plotting_html.py::test_page_needs_no_matplotlib",
)


# `--dist loadfile` (pyproject.toml) hands each xdist worker whole files, in
# the order below: the files whose tests add up to the most time (10 s or more
# on some backend, CI on 2 cores, 2026-12-07), most first, then the others by
# their number of tests (xdist's own order). The long files start the run and
# only short ones are left when the workers run out of work: in xdist's order
# (by number of tests) the JAX suite's 67 s file came last and one worker
# idled for 67 s (TensorFlow: 33 s). Correctness never depends on this order,
# only how evenly the workers finish.
RUN_FIRST = (
    "test_alignment_attention.py",
    "examples/nmt/training/test_data_parallel.py",
    "examples/nmt/training/test_fit.py",
    "test_attention_rnn_cell.py",
    "examples/nmt/test_train.py",
    "test_layer_contract.py",
    "examples/nmt/test_export.py",
    "test_models.py",
    "examples/nmt/models/test_rnn.py",
    "examples/captioning/test_train.py",
    "test_docs.py",
    "examples/speech/test_export.py",
    "test_decoding.py",
    "examples/speech/test_train.py",
    "examples/nmt/test_backends.py",
    "examples/captioning/test_transformer.py",
    "test_sliding_window.py",
    "examples/nmt/test_runs.py",
    "test_bad_inputs.py",
    "test_benchmarks.py",
    "test_layers.py",
    "examples/common/test_common.py",
    "examples/nmt/host/test_runs.py",
    "examples/nmt/data/test_tfds.py",
    "examples/nmt/test_readme_saved_model.py",
    "test_saved_alignment_fixture.py",
    "examples/captioning/test_model.py",
)


def pytest_configure(config):
    # xdist >= 3.6 sorts the files by their number of tests unless told not
    # to; the collection's order (pytest_collection_modifyitems) is the one
    # wanted. Older xdist keeps its own order.
    if getattr(config.option, "loadscopereorder", None) is not None:
        config.option.loadscopereorder = False


def _relative_path(item):
    return os.path.relpath(str(item.path), TESTS).replace(os.sep, "/")


def _listed(item, node_ids):
    path = _relative_path(item)
    name = f"{path}::{getattr(item, 'originalname', item.name)}"
    return any(node_id in (path, name) for node_id in node_ids)


def _on_every_backend(item):
    path = _relative_path(item)
    return any(
        path.startswith(entry) if entry.endswith("/") else path == entry
        for entry in EXAMPLES_ON_EVERY_BACKEND
    )


def _backend_independent(item):
    if _listed(item, BACKEND_DEPENDENT):
        return False
    return "backend_independent" in item.keywords or _listed(item, BACKEND_INDEPENDENT)


def pytest_collection_modifyitems(config, items):
    rank = {path: index for index, path in enumerate(RUN_FIRST)}
    sizes = collections.Counter(str(item.path) for item in items)
    # Stable: each file's tests keep their order.
    items.sort(key=lambda item: (rank.get(_relative_path(item), len(rank)), -sizes[str(item.path)]))
    for item in items:
        if BACKEND != "tensorflow":
            if str(item.path).startswith(EXAMPLES) and not _on_every_backend(item):
                # The example's other tests (text, data, files, plots, the
                # command lines) run once, under KERAS_BACKEND=tensorflow.
                item.add_marker(
                    pytest.mark.skip(reason="example tests of this kind run under tensorflow")
                )
            elif _backend_independent(item):
                item.add_marker(
                    pytest.mark.skip(
                        reason="backend-independent: runs once, under KERAS_BACKEND=tensorflow"
                    )
                )
        if "slow" in item.keywords and not config.getoption("--run-slow"):
            item.add_marker(pytest.mark.skip(reason="slow; run with --run-slow"))
        if "tf_only" in item.keywords and BACKEND != "tensorflow":
            item.add_marker(pytest.mark.skip(reason="needs KERAS_BACKEND=tensorflow"))


@pytest.fixture(scope="session", autouse=True)
def _one_jax_compilation_cache(tmp_path_factory):
    """On JAX: one persistent XLA compilation cache for the test session, shared
    by its xdist workers (new for each session, in pytest's temporary folder).

    JAX compiles every eager op and every jitted function, and many tests build
    the same programs again (the same layer and shapes in another check, in the
    other worker): a later compile of a program loads the executable an earlier
    one wrote. The same program and flags give the same executable: no result
    changes. A cache the user set (JAX_COMPILATION_CACHE_DIR) is kept. Measured
    on 2 cores, load ~2.5: test_layer_contract, test_layers, test_models and
    test_sliding_window under -n 2, 307 -> 268 CPU seconds, 164 -> 151 s wall.
    """
    if BACKEND != "jax" or jax.config.jax_compilation_cache_dir:
        yield
        return
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's folder, above each worker's own
    jax.config.update("jax_compilation_cache_dir", str(base / "jax_compilation_cache"))
    # Every program: most of the suite's are small, compiled in well under 1 s.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    yield


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    # No clear_session here: its garbage collection costs ~0.25 s a test.
    keras.utils.set_random_seed(1234)
    keras.config.set_dtype_policy("float32")
    yield
    keras.config.set_dtype_policy("float32")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
