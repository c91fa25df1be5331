"""``python -m examples.nmt.data``: loads a dataset, prints a few examples (``show``)."""

from examples.nmt.data.show import main

main()
