"""Calling Cython-compiled code from Ray (FEATURES EX-018, MISC-002).

Compiled functions cannot be decorated inside the ``.pyx``; wrap them here with
``ray.remote(module.func)``. The compiled modules must be importable on every
node (Ray does not compile or ship Cython code for you). Build them first::

    cd examples/cython && pip install -e .      # or: python setup.py build_ext --inplace
    python cython_main.py --help
    python cython_main.py --example example1    # or --example all
"""

from __future__ import annotations

import argparse

import numpy as np

import ray


def _modules():
    try:
        from cython_examples import cython_blas, cython_simple
    except ImportError as e:
        raise SystemExit(
            f"{e}: build the Cython examples first: cd examples/cython && pip install -e ."
        ) from None
    return cython_simple, cython_blas


def example1():
    """A compiled plain function as a task."""
    cy, _ = _modules()
    return ray.get(ray.remote(cy.simple_func).remote(1, 2, 3))


def example2():
    """Recursive Fibonacci (Python objects) as tasks."""
    cy, _ = _modules()
    f = ray.remote(cy.fib)
    return ray.get([f.remote(n) for n in range(10)])


def example3():
    """The C-int version."""
    cy, _ = _modules()
    return ray.get(ray.remote(cy.fib_int).remote(25))


def example4():
    """A cpdef function."""
    cy, _ = _modules()
    return ray.get(ray.remote(cy.fib_cpdef).remote(25))


def example5():
    """A cdef function through its Python wrapper."""
    cy, _ = _modules()
    return ray.get(ray.remote(cy.fib_cdef).remote(25))


def example6():
    """A compiled class as an actor."""
    cy, _ = _modules()
    actor = ray.remote(cy.simple_class).remote()
    values = ray.get([actor.increment.remote() for _ in range(3)])
    ray.kill(actor)
    return values


def example7():
    """BLAS (ddot via scipy's cython_blas) inside a task."""
    _, blas = _modules()
    x = np.arange(1000, dtype=np.float64)
    return ray.get(ray.remote(blas.dot).remote(x, x))


def example8():
    """Typed memory buffers: arrays arrive read-only (zero-copy from the object store),
    so the ``.pyx`` declares ``const double[::1]`` and returns a new array. Pass the
    numpy array itself: a raw ``memoryview`` travels as plain bytes, loses its element
    type, and the typed Cython function refuses it (``Buffer dtype mismatch``)."""
    _, blas = _modules()
    x = np.array([1.0, np.e, -1.0, 0.0, np.e**2])
    return ray.get(ray.remote(blas.masked_log).remote(x))


EXAMPLES = {f.__name__: f for f in (example1, example2, example3, example4, example5, example6,
                                    example7, example8)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(
        description="Run the Cython examples on Ray.",
        epilog="\n".join(f"{name}: {f.__doc__.splitlines()[0]}" for name, f in EXAMPLES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--example", default="all", choices=[*EXAMPLES, "all"])
    parser.add_argument("--redis-address", "--address", dest="address", default=None)
    args = parser.parse_args(argv)
    if not ray.is_initialized():
        ray.init(address=args.address)
    chosen = EXAMPLES if args.example == "all" else {args.example: EXAMPLES[args.example]}
    results = {}
    for name, f in chosen.items():
        results[name] = f()
        print(f"{name}: {results[name]}")
    return results


if __name__ == "__main__":
    main()
