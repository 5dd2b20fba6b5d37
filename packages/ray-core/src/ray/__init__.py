# ray is one import package assembled from several distributions (ray-core,
# ray-tune, ray-rllib, ...): only ray-core ships this file, and it must extend
# __path__ before anything imports a sub-package.
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

__version__ = "0.7.0"
