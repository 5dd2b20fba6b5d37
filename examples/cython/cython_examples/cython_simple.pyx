#!python
# cython: embedsignature=True, binding=True, language_level=3

# Plain Python function, compiled.
def simple_func(x, y, z):
    return x + y + z


# Recursive Fibonacci with Python objects.
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


# The same with C ints inside.
def fib_int(int n):
    if n < 2:
        return n
    return fib_int(n - 1) + fib_int(n - 2)


# cpdef: callable from Python, C-speed when called from Cython.
cpdef long fib_cpdef(int n):
    if n < 2:
        return n
    return fib_cpdef(n - 1) + fib_cpdef(n - 2)


cdef long _fib_cdef(int n):
    if n < 2:
        return n
    return _fib_cdef(n - 1) + _fib_cdef(n - 2)


# cdef functions are not visible from Python: wrap one.
def fib_cdef(int n):
    return _fib_cdef(n)


# A Python class compiled by Cython (can become a Ray actor).
class simple_class:
    def __init__(self):
        self.value = 0

    def increment(self):
        self.value += 1
        return self.value
