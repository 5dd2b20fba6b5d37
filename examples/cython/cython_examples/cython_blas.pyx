#!python
# cython: embedsignature=True, binding=True, language_level=3
"""BLAS from Cython through scipy's cython_blas (no BLAS headers needed)."""

cimport scipy.linalg.cython_blas as blas
import numpy as np


def dot(const double[::1] x, const double[::1] y):
    """x . y with BLAS ddot (``const``: arrays from Ray's object store are read-only)."""
    cdef int n = x.shape[0]
    cdef int inc = 1
    if y.shape[0] != n:
        raise ValueError(f"dot: x has {n} elements but y has {y.shape[0]}")
    # ddot does not write through its pointers; the const cast is safe.
    return blas.ddot(&n, <double*>&x[0], &inc, <double*>&y[0], &inc)


def masked_log(const double[::1] x):
    """log(x) where x > 0, 0 elsewhere: takes a typed memory buffer, returns a new array."""
    out = np.zeros(x.shape[0])
    cdef double[::1] view = out
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        if x[i] > 0:
            view[i] = np.log(x[i])
    return out
