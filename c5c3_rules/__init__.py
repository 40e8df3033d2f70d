"""The rule files, templates and CRDs the operator serves, installed as package data (rules/, templates/, crds/),
and the example orders (orders/) the embedded run's banner offers.

No code: `engine` finds this package by name (engine/rules/bundle.py). In a checkout the folders
are links to the checkout's rules/, templates/, deploy/crds/ and examples/orders/.
"""
