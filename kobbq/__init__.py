"""KoBBQ builder: rebuild culturally adapted BBQ benchmarks from their raw materials."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kobbq-builder")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"
