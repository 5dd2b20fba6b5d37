"""Builds the Cython examples: ``pip install -e .`` or ``python setup.py build_ext --inplace``."""

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension("cython_examples.cython_simple", ["cython_examples/cython_simple.pyx"]),
    Extension("cython_examples.cython_blas", ["cython_examples/cython_blas.pyx"],
              include_dirs=[np.get_include()]),
]

setup(
    name="cython_examples",
    version="0.1",
    packages=["cython_examples"],
    ext_modules=cythonize(extensions, language_level=3, nthreads=2),
    zip_safe=False,
)
