import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

BACKEND = keras.backend.backend()


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


EXAMPLES = os.path.join(os.path.dirname(__file__), "examples")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if str(item.path).startswith(EXAMPLES) and BACKEND != "tensorflow":
            # The NMT example is TensorFlow-based (tf.data, SavedModel export);
            # its tests run once, under KERAS_BACKEND=tensorflow.
            item.add_marker(pytest.mark.skip(reason="examples run on the TensorFlow backend"))
        if "slow" in item.keywords and not config.getoption("--run-slow"):
            item.add_marker(pytest.mark.skip(reason="slow; run with --run-slow"))
        if "tf_only" in item.keywords and BACKEND != "tensorflow":
            item.add_marker(pytest.mark.skip(reason="needs KERAS_BACKEND=tensorflow"))


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
