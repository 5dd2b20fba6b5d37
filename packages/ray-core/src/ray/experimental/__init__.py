"""Experimental APIs of the 0.7 documents (named actors, signals, async, TF/torch utils).

Other distributions add subpackages here (ray-sgd ships ``ray.experimental.sgd``).
"""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)
