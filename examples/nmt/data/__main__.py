"""``python -m examples.nmt.data``: builds (and caches) a dataset, prints a few examples."""

from examples.nmt.data.sources import main

main()
