"""What a running variant tells the harness besides its exception: device, checks, measurements.

The helpers in ``shared.checks`` append here while a variant runs; the harness's executor
writes it out with the outcome. Run by hand (``python cases/x/fixed.py``) it is never written.
"""

RECORD: dict = {"device": None, "checks": [], "measurements": []}
