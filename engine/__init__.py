"""A declarative rule engine that serves credential orders as a Kubernetes operator.

The package is kind-agnostic: every order kind is described by rule files and
templates outside it.
"""

__version__ = "0.1.0"
