"""The integration lane: tests that start processes or servers (loopback only).

``make unit-integration`` runs them; ``make unit`` stays pure and fast.  The
collection path is built the same way as for the unit tests: their conftest
does it, so it runs here too.
"""
import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(__file__), "..", "unit", "conftest.py"))
