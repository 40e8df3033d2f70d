"""The rule files, templates and CRDs the operator serves, installed as package data (rules/, templates/, crds/).

No code: `engine` finds this package by name (engine/rules/bundle.py). In a checkout the three folders
are links to the checkout's rules/, templates/ and deploy/crds/.
"""
