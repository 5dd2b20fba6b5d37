"""Compiled Cython modules used by cython_main.py (build with `pip install -e .`)."""
