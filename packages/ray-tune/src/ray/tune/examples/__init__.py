"""`ray.tune.examples`: example trainables importable from the package, as in Ray
(`from ray.tune.examples.async_hyperband_example import MyTrainableClass`). The runnable
example scripts with their smoke tests live in the repository's `examples/tune/`.
"""
