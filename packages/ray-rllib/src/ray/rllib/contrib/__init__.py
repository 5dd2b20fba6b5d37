"""Contributed algorithms, run as ``--run contrib/<Name>``."""
